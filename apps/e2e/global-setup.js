// The deployment suites run the servers as the image does (`node dist/…`): build dist/ once, first.
// SWC only, well under a second, so every e2e run tests the current sources.
const { build } = require('../../tools/build/build.js');

module.exports = async () => {
  await build();
};
