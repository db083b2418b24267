#!/usr/bin/env node
// The image's entry point: `switchyard-server proxy | control-plane | sim-instance [--help | --version]`
// loads that server's built main (dist/, from `npm run build`) in this same process, so node is
// PID 1 and receives SIGTERM itself. `switchyard-server healthcheck [PATH]` is the image's
// HEALTHCHECK: GET http://127.0.0.1:$PORT/PATH (default /healthz), exit 0 on a 2xx.
const path = require('node:path');

const SERVERS = {
  proxy: 'apps/proxy/src/main.js',
  'control-plane': 'apps/control-plane/src/main.js',
  'sim-instance': 'apps/sim-instance/src/main.js',
};
const usage = `usage: switchyard-server {${Object.keys(SERVERS).join('|')}} [--help | --version]\n       switchyard-server healthcheck [PATH]\n`;

const [what, ...rest] = process.argv.slice(2);
if (what === 'healthcheck') {
  const url = `http://127.0.0.1:${process.env.PORT || 8080}${rest[0] ?? '/healthz'}`;
  fetch(url, { signal: AbortSignal.timeout(3000) }).then(
    (res) => process.exit(res.ok ? 0 : 1),
    () => process.exit(1),
  );
} else if (Object.hasOwn(SERVERS, what ?? '')) {
  // The server reads its own flags from argv[2…]: drop the server's name.
  process.argv.splice(2, 1);
  require(path.join(__dirname, '..', 'dist', SERVERS[what]));
} else if (what === '--help' || what === '-h') {
  process.stdout.write(usage);
} else {
  process.stderr.write(what === undefined ? usage : `unknown server: ${what}\n${usage}`);
  process.exit(2);
}
