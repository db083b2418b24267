import { runCli } from '@switchyard/cli-core';

// Ctrl-C ends `watch` through this signal instead of killing the process mid-frame.
const interrupted = new AbortController();
process.once('SIGINT', () => interrupted.abort());

void runCli(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr, signal: interrupted.signal }).then((code) => {
  process.exitCode = code;
});
