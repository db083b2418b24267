/**
 * The fast upstream of the overhead benchmark, run as its own process: a fixed chat
 * completion JSON; a fixed 64-chunk SSE stream when the body asks `"stream":true`;
 * with `"hold":true` an SSE stream that sends one event and then stays open (idle
 * streams for the memory measurement). Listens on every port of PORTS.
 */
import http from 'node:http';

const CHUNKS = 64;
const created = 1_700_000_000;
const json = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created,
    model: 'bench-model',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the fast upstream.' }, finish_reason: 'stop', logprobs: null }],
    usage: { prompt_tokens: 8, completion_tokens: 7, total_tokens: 15 },
  }),
);
const sseChunk = (i: number) =>
  Buffer.from(
    `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created, model: 'bench-model', choices: [{ index: 0, delta: { content: ` tok${i}` }, finish_reason: null, logprobs: null }] })}\n\n`,
  );
const sse = Array.from({ length: CHUNKS }, (_, i) => sseChunk(i));
const sseEnd = Buffer.from('data: [DONE]\n\n');
const sseHeaders = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };

let held = 0;

function handle(req: http.IncomingMessage, res: http.ServerResponse): void {
  if (req.method === 'GET') {
    const body = JSON.stringify({ held });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    return void res.end(body);
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('latin1');
    if (body.includes('"hold":true')) {
      held += 1;
      res.once('close', () => (held -= 1));
      res.writeHead(200, sseHeaders);
      return void res.write(sse[0]);
    }
    if (body.includes('"stream":true')) {
      res.writeHead(200, sseHeaders);
      for (const c of sse) res.write(c);
      return void res.end(sseEnd);
    }
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': json.length });
    res.end(json);
  });
}

for (const port of (process.env.PORTS ?? '').split(',').filter(Boolean).map(Number)) {
  const server = http.createServer(handle);
  // Longer than any peer's idle pool timeout, so no peer ever races a closing connection.
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 130_000;
  server.listen(port, '127.0.0.1');
}
process.once('SIGTERM', () => process.exit(0));
