/**
 * The LLM-like upstream of the floor benchmark, run as its own process: every POST is
 * answered with an SSE stream of CHUNKS chunks spaced CHUNK_MS apart (a token stream),
 * then `data: [DONE]`; a GET (the control plane's probe of /health) gets an empty 200, as
 * vLLM answers it. Listens on PORT. CONTENT_TYPE (default text/event-stream) lets the same
 * bytes go out unlabelled as SSE, so the proxy passes them without parsing them (the
 * "SSE parsing off" row of the floor benchmark).
 */
import http from 'node:http';

const CHUNKS = Number(process.env.CHUNKS ?? 100);
const CHUNK_MS = Number(process.env.CHUNK_MS ?? 20);
const created = 1_700_000_000;
const chunk = (i: number) =>
  Buffer.from(`data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created, model: 'bench-model', choices: [{ index: 0, delta: { content: ` tok${i}` }, finish_reason: null, logprobs: null }] })}\n\n`);
const chunks = Array.from({ length: CHUNKS }, (_, i) => chunk(i));
const done = Buffer.from('data: [DONE]\n\n');
const CONTENT_TYPE = process.env.CONTENT_TYPE ?? 'text/event-stream';

const server = http.createServer((req, res) => {
  if (req.method === 'GET') return void res.writeHead(200, { 'content-length': '0' }).end();
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': CONTENT_TYPE, 'cache-control': 'no-cache' });
    let i = 0;
    const timer = setInterval(() => {
      if (i < CHUNKS) return void res.write(chunks[i++]);
      clearInterval(timer);
      res.end(done);
    }, CHUNK_MS);
    res.once('close', () => clearInterval(timer));
  });
});
server.keepAliveTimeout = 120_000;
server.listen(Number(process.env.PORT), '127.0.0.1');
process.once('SIGTERM', () => process.exit(0));
