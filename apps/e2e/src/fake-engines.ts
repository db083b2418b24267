import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { ENGINE_HEALTH, renderEngineMetrics, type ExposedEngine } from '@switchyard/engines';

export type FakeEngineKind = ExposedEngine;

export interface FakeEngineOptions {
  model: string;
  /** 0 (default): a free port. Closing an engine refuses connections as a loading vLLM does; starting one on its port brings it back. */
  port?: number;
  /** Delay between streamed tokens, so requests stay in flight for a while. */
  tokenDelayMs?: number;
}

/** How each engine dresses an OpenAI answer; the SSE framing is the same for all three. */
const FLAVOUR: Record<FakeEngineKind, { ownedBy: string; firstContent: string | null; modelExtra: (model: string) => Record<string, unknown> }> = {
  vllm: { ownedBy: 'vllm', firstContent: '', modelExtra: (model) => ({ root: model, parent: null, max_model_len: 8192, permission: [] }) },
  sglang: { ownedBy: 'sglang', firstContent: '', modelExtra: (model) => ({ root: model, max_model_len: 8192 }) },
  llamacpp: { ownedBy: 'llamacpp', firstContent: null, modelExtra: () => ({ meta: { vocab_type: 2, n_vocab: 151936, n_ctx_train: 32768, n_embd: 3584, n_params: 7615616512, size: 4677120000 } }) },
};

/**
 * An engine written in the test, speaking what vLLM, SGLang or llama.cpp server speak on the
 * routes Switchyard uses: /health, /metrics (running, waiting, KV usage as set), /v1/models and
 * /v1/chat/completions. It never heartbeats: only probes keep it alive.
 */
export class FakeEngine {
  /** Set false: /health (and inference) answer as that engine does when it cannot serve. */
  healthy = true;
  running: number | null = 0;
  waiting: number | null = 0;
  kv: number | null = 0;
  /** Inference requests received (chat completions), healthy or not. */
  received = 0;
  readonly probes = { health: 0, metrics: 0, models: 0 };
  tokenDelayMs: number;
  private seq = 0;
  private promptTokens = 0;
  private generationTokens = 0;
  readonly server: http.Server;

  constructor(readonly kind: FakeEngineKind, readonly model: string, options: FakeEngineOptions) {
    this.tokenDelayMs = options.tokenDelayMs ?? 0;
    this.server = http.createServer((req, res) => void this.handle(req, res));
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private send(res: http.ServerResponse, status: number, body: string, contentType = 'application/json'): void {
    res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }

  private notReady(res: http.ServerResponse): void {
    const h = ENGINE_HEALTH[this.kind].notReady;
    this.send(res, h.status, h.body, h.contentType);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = req.url?.split('?')[0] ?? '/';
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (req.method === 'GET' && path === '/health') {
      this.probes.health += 1;
      if (!this.healthy) return this.notReady(res);
      const ok = ENGINE_HEALTH[this.kind].ready;
      return this.send(res, ok.status, ok.body, ok.contentType);
    }
    if (req.method === 'GET' && path === '/metrics') {
      this.probes.metrics += 1;
      // llama.cpp answers nothing but /health's 503 and /v1/models while it loads.
      if (!this.healthy && this.kind === 'llamacpp') return this.notReady(res);
      const text = renderEngineMetrics(this.kind, {
        model: this.model,
        running: this.running,
        waiting: this.waiting,
        kv_cache_usage: this.kv,
        promptTokens: this.promptTokens,
        generationTokens: this.generationTokens,
      });
      return this.send(res, 200, text, 'text/plain; version=0.0.4; charset=utf-8');
    }
    if (req.method === 'GET' && path === '/v1/models') {
      this.probes.models += 1;
      const f = FLAVOUR[this.kind];
      const data = [{ id: this.model, object: 'model', created: 1_753_600_000, owned_by: f.ownedBy, ...f.modelExtra(this.model) }];
      return this.send(res, 200, JSON.stringify({ object: 'list', data }));
    }
    if (req.method === 'POST' && path === '/v1/chat/completions') {
      this.received += 1;
      if (!this.healthy) return this.notReady(res);
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        return this.send(res, 400, JSON.stringify({ error: { message: 'body: not valid JSON', type: 'invalid_request_error', code: 400 } }));
      }
      return this.chat(body, res);
    }
    if (req.method === 'POST' && path === '/v1/responses') {
      this.received += 1;
      return this.respond(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>, res);
    }
    this.send(res, 404, JSON.stringify({ error: { message: `no route ${req.method} ${path}`, type: 'not_found_error', code: 404 } }));
  }

  /** Responses this engine made, by id: as vLLM's Responses API keeps them, in its own memory only. */
  readonly responses = new Set<string>();

  /** vLLM's /v1/responses: a follow-up names a response this engine made, or gets vLLM's 404. */
  private async respond(body: Record<string, unknown>, res: http.ServerResponse): Promise<void> {
    const prev = body.previous_response_id;
    if (typeof prev === 'string' && !this.responses.has(prev)) {
      return this.send(res, 404, JSON.stringify({ error: { message: `Response with id '${prev}' not found.`, type: 'invalid_request_error', code: 404 } }));
    }
    const id = `resp_${this.kind}${this.port}x${(++this.seq).toString(16)}`;
    this.responses.add(id);
    const text = `Hello from ${this.kind}`;
    const message = { type: 'message', id: `msg_${id}`, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] };
    const response = (status: string, output: unknown[]) => ({
      id,
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      model: this.model,
      status,
      output,
      previous_response_id: prev ?? null,
      usage: status === 'completed' ? { input_tokens: 7, output_tokens: 3, total_tokens: 10 } : null,
    });
    if (body.stream !== true) return this.send(res, 200, JSON.stringify(response('completed', [message])));
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    let n = 0;
    const event = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n++, ...data })}\n\n`;
    res.write(event('response.created', { response: response('in_progress', []) }));
    if (this.tokenDelayMs) await sleep(this.tokenDelayMs);
    res.write(event('response.output_text.delta', { item_id: message.id, output_index: 0, content_index: 0, delta: text }));
    res.end(event('response.completed', { response: response('completed', [message]) }));
  }

  private async chat(body: Record<string, unknown>, res: http.ServerResponse): Promise<void> {
    const words = ['Hello', ' from', ` ${this.kind}`];
    const max = typeof body.max_tokens === 'number' ? body.max_tokens : words.length;
    const out = words.slice(0, Math.max(1, max));
    const finish = out.length < words.length ? 'length' : 'stop';
    const usage = { prompt_tokens: 7, completion_tokens: out.length, total_tokens: 7 + out.length };
    this.promptTokens += usage.prompt_tokens;
    this.generationTokens += usage.completion_tokens;
    const head = { id: `chatcmpl-${this.kind}${(++this.seq).toString(16)}`, created: Math.floor(Date.now() / 1000), model: this.model };
    if (body.stream !== true) {
      const message = { role: 'assistant', content: out.join(''), tool_calls: [] };
      return this.send(res, 200, JSON.stringify({ ...head, object: 'chat.completion', choices: [{ index: 0, message, logprobs: null, finish_reason: finish }], usage }));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    const chunk = (delta: Record<string, unknown>, finishReason: string | null) =>
      `data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] })}\n\n`;
    res.write(chunk({ role: 'assistant', content: FLAVOUR[this.kind].firstContent }, null));
    for (const word of out) {
      if (this.tokenDelayMs) await sleep(this.tokenDelayMs);
      if (res.destroyed) return;
      res.write(chunk({ content: word }, null));
    }
    res.write(chunk({}, finish));
    const opts = body.stream_options as { include_usage?: boolean } | undefined;
    if (opts?.include_usage) res.write(`data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', choices: [], usage })}\n\n`);
    res.end('data: [DONE]\n\n');
  }
}

/** Starts a fake engine of that kind serving `model`; close() it when done. */
export async function startFakeEngine(kind: FakeEngineKind, options: FakeEngineOptions): Promise<FakeEngine> {
  const engine = new FakeEngine(kind, options.model, options);
  await new Promise<void>((resolve, reject) => {
    engine.server.once('error', reject);
    engine.server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  return engine;
}
