module.exports = {
  ...require('../../jest.preset.js'),
  displayName: require('path').basename(__dirname),
  rootDir: __dirname,
  testRegex: '\\.(e2e-)?spec\\.ts$',
  globalSetup: '<rootDir>/global-setup.js',
};
