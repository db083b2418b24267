#!/usr/bin/env node
// The `switchyard` operator CLI. It runs the TypeScript entry directly (no build step);
// the project's tsconfig is named explicitly so the path aliases resolve from any working directory.
const path = require('node:path');

process.env.SWC_NODE_PROJECT ??= path.join(__dirname, '..', 'tsconfig.json');
require('@swc-node/register');
require('../apps/cli/src/main.ts');
