module.exports = { ...require('../../jest.preset.js'), displayName: require('path').basename(__dirname), rootDir: __dirname };
