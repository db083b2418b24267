/**
 * Node's floor for a proxy, used only for comparison in the benchmark: node http in,
 * one undici Agent out, `stream.pipeline` back, and nothing else (no routing, no
 * counts, no metrics, no logs). Listens on PORT and forwards every request to UPSTREAM.
 * Closing the client destroys the upstream body through the pipeline, which aborts it.
 */
import http from 'node:http';
import { pipeline } from 'node:stream';
import { Agent, request } from 'undici';

const upstream = process.env.UPSTREAM ?? '';
const agent = new Agent({ keepAliveTimeout: 30_000 });

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    request(upstream + req.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks), dispatcher: agent }).then(
      (up) => {
        const headers: Record<string, string | string[]> = {};
        for (const k in up.headers) if (k !== 'connection' && k !== 'keep-alive' && k !== 'transfer-encoding') headers[k] = up.headers[k] as string | string[];
        res.writeHead(up.statusCode, headers);
        pipeline(up.body, res, () => undefined);
      },
      () => {
        res.writeHead(502).end();
      },
    );
  });
});
server.keepAliveTimeout = 120_000;
server.listen(Number(process.env.PORT), '127.0.0.1');
process.once('SIGTERM', () => process.exit(0));
