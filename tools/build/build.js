#!/usr/bin/env node
// `npm run build`: compiles the servers, the CLI and the libs they use to plain CommonJS in dist/,
// with SWC (Nest needs decorator metadata, which esbuild does not emit). Path aliases
// (@switchyard/*) become relative requires, so `node dist/apps/proxy/src/main.js` needs nothing
// but node_modules. Type-checking is `npm run typecheck`; this step only transpiles, so it stays
// fast enough to run before the e2e suites.
const fs = require('node:fs');
const path = require('node:path');
const swc = require('@swc/core');

const ROOT = path.resolve(__dirname, '../..');
const OUT = path.join(ROOT, 'dist');
/** What ships: the servers, the CLI and every lib but the test fixtures. */
const SOURCES = ['apps/control-plane/src', 'apps/proxy/src', 'apps/sim-instance/src', 'apps/cli/src', ...libDirs()];
const TEST_FILE = /\.(spec|e2e-spec|contract)\.ts$/;

function libDirs() {
  return fs
    .readdirSync(path.join(ROOT, 'libs'))
    .filter((name) => name !== 'testing')
    .map((name) => `libs/${name}/src`);
}

function walk(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

function swcOptions() {
  const { compilerOptions } = JSON.parse(fs.readFileSync(path.join(ROOT, 'tsconfig.base.json'), 'utf8'));
  return {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
      baseUrl: ROOT,
      paths: compilerOptions.paths,
    },
    module: { type: 'commonjs' },
    swcrc: false,
    configFile: false,
  };
}

async function build() {
  const started = Date.now();
  fs.rmSync(OUT, { recursive: true, force: true });
  const options = swcOptions();
  let compiled = 0;
  for (const src of SOURCES) {
    for (const file of walk(path.join(ROOT, src))) {
      const rel = path.relative(ROOT, file);
      if (TEST_FILE.test(file)) continue;
      if (file.endsWith('.ts')) {
        const { code } = await swc.transformFile(file, { ...options, filename: file });
        write(path.join(OUT, rel.replace(/\.ts$/, '.js')), code);
        compiled++;
      } else {
        // Assets read at run time beside their module (the dashboard page).
        write(path.join(OUT, rel), fs.readFileSync(file));
      }
    }
  }
  return { files: compiled, ms: Date.now() - started };
}

function write(file, data) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, data);
}

module.exports = { build, OUT };

if (require.main === module) {
  build().then(
    ({ files, ms }) => console.log(`dist/: ${files} files compiled in ${ms} ms`),
    (err) => {
      console.error(err.message);
      process.exit(1);
    },
  );
}
