import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorBody } from '@switchyard/contracts';
import { Batcher } from './batcher';
import type { SimConfig } from './sim-config';

export interface SimStats {
  running: number;
  queued: number;
  completed: number;
  disconnects: number;
  qps_1m: number;
  gpu_util: number;
}

type Kind = 'chat' | 'completion' | 'embedding';

/** An OpenAI-compatible simulated model server whose latency grows with queue, prompt and batch. */
export class SimServer {
  readonly batcher: Batcher;
  private completed = 0;
  private disconnects = 0;
  private readonly finishedAt: number[] = [];
  private seq = 0;
  readonly server: http.Server;

  constructor(private readonly config: SimConfig) {
    this.batcher = new Batcher(config.MAX_BATCH);
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 65_000;
  }

  stats(): SimStats {
    const cutoff = Date.now() - 60_000;
    while (this.finishedAt.length && this.finishedAt[0] < cutoff) this.finishedAt.shift();
    return {
      running: this.batcher.running,
      queued: this.batcher.queued,
      completed: this.completed,
      disconnects: this.disconnects,
      qps_1m: this.finishedAt.length / 60,
      gpu_util: (this.batcher.running / this.config.MAX_BATCH) * 100,
    };
  }

  listen(port: number, host: string): Promise<void> {
    return new Promise((resolve) => this.server.listen(port, host, resolve));
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private json(res: http.ServerResponse, status: number, body: unknown): void {
    const data = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) });
    res.end(data);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = req.url?.split('?')[0] ?? '/';
    if (req.method === 'GET' && url === '/healthz') return this.json(res, 200, { status: 'ok' });
    if (req.method === 'GET' && url === '/sim/stats') return this.json(res, 200, this.stats());
    if (req.method === 'GET' && url === '/v1/models') {
      return this.json(res, 200, { object: 'list', data: [{ id: this.config.MODEL, object: 'model', created: 0, owned_by: 'switchyard-sim' }] });
    }
    const kind: Kind | undefined =
      url === '/v1/chat/completions' ? 'chat' : url === '/v1/completions' ? 'completion' : url === '/v1/embeddings' ? 'embedding' : undefined;
    if (req.method !== 'POST' || !kind) return this.json(res, 404, errorBody(`no route ${req.method} ${url}`, 'not_found_error', 'not_found'));
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    } catch {
      return this.json(res, 400, errorBody('body: not valid JSON', 'invalid_request_error', 'invalid_json'));
    }
    await this.generate(kind, body, res);
  }

  private async generate(kind: Kind, body: Record<string, unknown>, res: http.ServerResponse): Promise<void> {
    const abort = new AbortController();
    let done = false;
    res.on('close', () => {
      if (!done) {
        this.disconnects += 1;
        abort.abort();
      }
    });
    const promptText = kind === 'chat' ? JSON.stringify(body.messages ?? '') : String(body.prompt ?? body.input ?? '');
    const promptTokens = Math.max(1, Math.ceil(promptText.length / 4));
    const maxTokens = kind === 'embedding' ? 0 : Math.max(1, Number(body.max_tokens ?? body.max_completion_tokens ?? this.config.DEFAULT_MAX_TOKENS) | 0);
    const stream = body.stream === true && kind !== 'embedding';
    const id = `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-sim${(++this.seq).toString(36)}`;
    const created = Math.floor(Date.now() / 1000);
    const model = this.config.MODEL;
    let release: (() => void) | undefined;
    try {
      release = await this.batcher.admit(abort.signal);
      await sleep(this.config.TTFT_BASE_MS + promptTokens * this.config.TTFT_PER_PROMPT_TOKEN_MS, undefined, { signal: abort.signal });
      const usage = { prompt_tokens: promptTokens, completion_tokens: maxTokens, total_tokens: promptTokens + maxTokens };
      if (kind === 'embedding') {
        done = true;
        this.finish();
        return this.json(res, 200, { object: 'list', model, data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2, 0.3, 0.4] }], usage });
      }
      if (stream) res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const tokens: string[] = [];
      for (let i = 0; i < maxTokens; i++) {
        if (i > 0) await sleep(this.tokenDelay(), undefined, { signal: abort.signal });
        const token = i === 0 ? 'tok' : ' tok';
        tokens.push(token);
        if (stream) res.write(`data: ${JSON.stringify(this.chunk(kind, id, created, model, token, null))}\n\n`);
      }
      done = true;
      this.finish();
      if (stream) {
        const last = this.chunk(kind, id, created, model, '', 'length') as Record<string, unknown>;
        const opts = body.stream_options as { include_usage?: boolean } | undefined;
        if (opts?.include_usage) last.usage = usage;
        res.end(`data: ${JSON.stringify(last)}\n\ndata: [DONE]\n\n`);
        return;
      }
      const text = tokens.join('');
      const choice =
        kind === 'chat'
          ? { index: 0, message: { role: 'assistant', content: text }, finish_reason: 'length', logprobs: null }
          : { index: 0, text, finish_reason: 'length', logprobs: null };
      this.json(res, 200, { id, object: kind === 'chat' ? 'chat.completion' : 'text_completion', created, model, choices: [choice], usage });
    } catch {
      // The client left: the work is abandoned, as a real server cancels the sequence.
      if (!res.writableEnded) res.destroy();
    } finally {
      release?.();
    }
  }

  /** Per-token time grows with the batch, as decoding a larger batch does. */
  private tokenDelay(): number {
    return this.config.TOKEN_MS + this.config.TOKEN_MS_PER_BATCH * (this.batcher.running - 1);
  }

  private finish(): void {
    this.completed += 1;
    this.finishedAt.push(Date.now());
  }

  private chunk(kind: Kind, id: string, created: number, model: string, token: string, finish: string | null): unknown {
    if (kind === 'chat') {
      return { id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta: token ? { content: token } : {}, finish_reason: finish, logprobs: null }] };
    }
    return { id, object: 'text_completion', created, model, choices: [{ index: 0, text: token, finish_reason: finish, logprobs: null }] };
  }
}
