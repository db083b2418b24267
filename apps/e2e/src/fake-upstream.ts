import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A scripted OpenAI-compatible upstream in the test process, for failure cases a simulator would not produce.
 * The control plane's probes get what a healthy engine without metrics answers (GET /health 200,
 * any other GET 404) and do not count as hits: `hits` counts the inference requests (POST) the
 * script answers. `received` records method, path and headers of every request, probes included
 * (what reached the instance: credentials, via). A body that is not JSON (multipart uploads) reaches
 * the script as `{}`.
 */
export class FakeUpstream {
  readonly server: http.Server;
  hits = 0;
  readonly received: { method: string; path: string; headers: http.IncomingHttpHeaders }[] = [];

  constructor(handler: (req: http.IncomingMessage, res: http.ServerResponse, body: Record<string, unknown>) => void) {
    this.server = http.createServer((req, res) => {
      this.received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers });
      if (req.method === 'GET') return void res.writeHead(req.url === '/health' ? 200 : 404).end();
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.hits += 1;
        const text = Buffer.concat(chunks).toString('utf8');
        const json = String(req.headers['content-type'] ?? '').startsWith('application/json') || !req.headers['content-type'];
        handler(req, res, (json ? JSON.parse(text || '{}') : {}) as Record<string, unknown>);
      });
    });
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  listen(): Promise<this> {
    return new Promise((resolve) => this.server.listen(0, '127.0.0.1', () => resolve(this)));
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

export const chatCompletion = (content: string) => ({
  id: 'chatcmpl-fake',
  object: 'chat.completion',
  created: 0,
  model: 'fake',
  choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop', logprobs: null }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
});

export const sseChunk = (content: string) =>
  `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'fake', choices: [{ index: 0, delta: { content }, finish_reason: null, logprobs: null }] })}\n\n`;

export function answerJson(res: http.ServerResponse, status: number, body: unknown): void {
  const data = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) });
  res.end(data);
}
