#!/usr/bin/env node
// The `switchyard` operator CLI. It runs the built JavaScript (dist/, from `npm run build`) when
// there is one: a call then costs ~0.1 s instead of compiling TypeScript each time. Without a
// build it runs the TypeScript source through @swc-node/register, naming the project's tsconfig
// so the path aliases resolve from any working directory.
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const built = path.join(root, 'dist', 'apps', 'cli', 'src', 'main.js');
if (fs.existsSync(built)) {
  require(built);
} else {
  process.env.SWC_NODE_PROJECT ??= path.join(root, 'tsconfig.json');
  require('@swc-node/register');
  require('../apps/cli/src/main.ts');
}
