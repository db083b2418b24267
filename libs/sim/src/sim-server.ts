import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorBody } from '@switchyard/contracts';
import { Histogram, renderEngineMetrics, VLLM_TTFT_BUCKETS } from '@switchyard/engines';
import { Batcher } from './batcher';
import { embed, toBase64 } from './embedding';
import { BadRequest, readEmbedding, readGeneration, tokensOf, type GenerationPlan } from './openai-request';
import type { SimConfig } from './sim-config';

export interface SimStats {
  running: number;
  queued: number;
  completed: number;
  disconnects: number;
  qps_1m: number;
  gpu_util: number;
  kv_cache_usage: number;
}

type Kind = 'chat' | 'completion' | 'embedding';
type Json = Record<string, unknown>;

/**
 * An OpenAI-compatible simulated model server that looks like vLLM to clients and to probes:
 * latency grows with queue, prompt and batch; /health and a vLLM-style /metrics from its own batcher.
 */
export class SimServer {
  readonly batcher: Batcher;
  private completed = 0;
  private disconnects = 0;
  private readonly finishedAt: number[] = [];
  private seq = 0;
  /** KV-cache tokens held by admitted sequences (prompt plus generated so far). */
  private kvTokens = 0;
  private promptTokens = 0;
  private generationTokens = 0;
  private readonly ttft = new Histogram(VLLM_TTFT_BUCKETS);
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
      kv_cache_usage: Math.min(1, this.kvTokens / this.config.KV_CACHE_TOKENS),
    };
  }

  /** The page vLLM serves on /metrics, for this sim's model. */
  metricsText(): string {
    const s = this.stats();
    return renderEngineMetrics('vllm', {
      model: this.config.MODEL,
      running: s.running,
      waiting: s.queued,
      kv_cache_usage: s.kv_cache_usage,
      promptTokens: this.promptTokens,
      generationTokens: this.generationTokens,
      ttft: this.ttft,
    });
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
    if (req.method === 'GET' && url === '/health') {
      // vLLM: 200 with an empty body.
      res.writeHead(200, { 'content-length': 0 });
      return void res.end();
    }
    if (req.method === 'GET' && url === '/healthz') return this.json(res, 200, { status: 'ok' });
    if (req.method === 'GET' && url === '/sim/stats') return this.json(res, 200, this.stats());
    if (req.method === 'GET' && url === '/metrics') {
      const text = this.metricsText();
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'content-length': Buffer.byteLength(text) });
      return void res.end(text);
    }
    if (req.method === 'GET' && url === '/v1/models') {
      const { MODEL, MAX_MODEL_LEN } = this.config;
      return this.json(res, 200, { object: 'list', data: [{ id: MODEL, object: 'model', created: 0, owned_by: 'vllm', root: MODEL, parent: null, max_model_len: MAX_MODEL_LEN }] });
    }
    const kind: Kind | undefined =
      url === '/v1/chat/completions' ? 'chat' : url === '/v1/completions' ? 'completion' : url === '/v1/embeddings' ? 'embedding' : undefined;
    if (req.method !== 'POST' || !kind) return this.json(res, 404, errorBody(`no route ${req.method} ${url}`, 'not_found_error', 'not_found'));
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: Json;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
    } catch {
      return this.json(res, 400, errorBody('body: not valid JSON', 'invalid_request_error', 'invalid_json'));
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return this.json(res, 400, errorBody('body: must be a JSON object', 'invalid_request_error', 'invalid_json'));
    try {
      if (kind === 'embedding') return await this.embeddings(body, res);
      await this.generate(kind, readGeneration(kind, body), res);
    } catch (err) {
      if (!(err instanceof BadRequest)) throw err;
      this.json(res, 400, errorBody(err.message, 'invalid_request_error', 'invalid_value', err.param));
    }
  }

  /** Holds a batch slot for the work `run` does; the client leaving abandons it, as a real server cancels the sequence. */
  private async admitted(res: http.ServerResponse, promptTokens: number, run: (signal: AbortSignal, hold: (tokens: number) => void) => Promise<void>): Promise<void> {
    const abort = new AbortController();
    let finished = false;
    res.on('close', () => {
      if (!finished) {
        this.disconnects += 1;
        abort.abort();
      }
    });
    let held = 0;
    const hold = (tokens: number) => {
      held += tokens;
      this.kvTokens += tokens;
    };
    let release: (() => void) | undefined;
    try {
      release = await this.batcher.admit(abort.signal);
      hold(promptTokens);
      await sleep(this.config.TTFT_BASE_MS + promptTokens * this.config.TTFT_PER_PROMPT_TOKEN_MS, undefined, { signal: abort.signal });
      await run(abort.signal, hold);
      finished = true;
      this.completed += 1;
      this.finishedAt.push(Date.now());
    } catch {
      if (!res.writableEnded) res.destroy();
    } finally {
      this.kvTokens -= held;
      release?.();
    }
  }

  private async embeddings(body: Json, res: http.ServerResponse): Promise<void> {
    const plan = readEmbedding(body);
    const dims = plan.dimensions ?? this.config.EMBEDDING_DIM;
    const promptTokens = plan.inputs.reduce((sum, s) => sum + tokensOf(s), 0);
    await this.admitted(res, promptTokens, async () => {
      this.promptTokens += promptTokens;
      const data = plan.inputs.map((text, index) => {
        const vector = embed(text, dims);
        return { object: 'embedding', index, embedding: plan.base64 ? toBase64(vector) : vector };
      });
      this.json(res, 200, { object: 'list', model: this.config.MODEL, data, usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } });
    });
  }

  /** How many tokens each choice gets and why it ends: its natural end ('stop') unless max_tokens comes first ('length'). */
  private answerLength(plan: GenerationPlan): { length: number; finish: 'stop' | 'length' } {
    const limit = plan.maxTokens ?? this.config.DEFAULT_MAX_TOKENS;
    // Without ANSWER_TOKENS the answer runs to max_tokens when one is given (benchmarks set lengths that way).
    const natural = plan.ignoreEos ? Infinity : (this.config.ANSWER_TOKENS ?? (plan.maxTokens === undefined ? limit : Infinity));
    return natural <= limit ? { length: natural, finish: 'stop' } : { length: limit, finish: 'length' };
  }

  private async generate(kind: 'chat' | 'completion', plan: GenerationPlan, res: http.ServerResponse): Promise<void> {
    const arrived = Date.now();
    const id = `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-sim${(++this.seq).toString(36)}`;
    const head = { id, object: kind === 'chat' ? 'chat.completion.chunk' : 'text_completion', created: Math.floor(arrived / 1000), model: this.config.MODEL };
    const tool = plan.toolCall;
    const { length, finish } = tool ? { length: 3, finish: 'tool_calls' as const } : this.answerLength(plan);
    const perChoice = tool ? tokensOf(tool.name + tool.arguments) : length;
    const usage = { prompt_tokens: plan.promptTokens, completion_tokens: perChoice * plan.n, total_tokens: plan.promptTokens + perChoice * plan.n };
    const choices = Array.from({ length: plan.n }, (_, i) => i);
    const callId = (c: number) => `chatcmpl-tool-${id.slice(-6)}${c}`;
    // A tool call streams as its name, then its arguments in two pieces, as vLLM's tool parsers do.
    const half = tool ? Math.ceil(tool.arguments.length / 2) : 0;
    const toolDelta = (step: number, c: number): Json =>
      step === 0
        ? { tool_calls: [{ index: 0, id: callId(c), type: 'function', function: { name: tool!.name, arguments: '' } }] }
        : { tool_calls: [{ index: 0, function: { arguments: step === 1 ? tool!.arguments.slice(0, half) : tool!.arguments.slice(half) } }] };
    const token = (step: number) => (step === 0 ? 'tok' : ' tok');
    const write = (obj: Json) => res.write(`data: ${JSON.stringify(obj)}\n\n`);
    const chunk = (c: number, delta: Json, text: string, finishReason: string | null) =>
      write({ ...head, choices: [kind === 'chat' ? { index: c, delta, logprobs: null, finish_reason: finishReason } : { index: c, text, logprobs: null, finish_reason: finishReason }] });

    await this.admitted(res, plan.promptTokens, async (signal, hold) => {
      if (plan.stream) res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      for (let step = 0; step < length; step++) {
        if (step > 0) await sleep(this.tokenDelay(), undefined, { signal });
        else this.ttft.observe((Date.now() - arrived) / 1000);
        hold(plan.n);
        if (!plan.stream) continue;
        for (const c of choices) {
          if (kind === 'chat' && step === 0) chunk(c, { role: 'assistant', content: '' }, '', null);
          chunk(c, tool ? toolDelta(step, c) : { content: token(step) }, token(step), null);
        }
      }
      this.promptTokens += plan.promptTokens;
      this.generationTokens += usage.completion_tokens;
      if (plan.stream) {
        for (const c of choices) chunk(c, {}, '', finish);
        // vLLM sends usage in a chunk of its own, with no choices, only when asked.
        if (plan.includeUsage) write({ ...head, choices: [], usage });
        res.end('data: [DONE]\n\n');
        return;
      }
      const text = Array.from({ length }, (_, s) => token(s)).join('');
      const message = (c: number) =>
        tool
          ? { role: 'assistant', content: null, tool_calls: [{ id: callId(c), type: 'function', function: { name: tool.name, arguments: tool.arguments } }] }
          : { role: 'assistant', content: text, tool_calls: [] };
      this.json(res, 200, {
        id,
        object: kind === 'chat' ? 'chat.completion' : 'text_completion',
        created: head.created,
        model: head.model,
        choices: choices.map((c) => (kind === 'chat' ? { index: c, message: message(c), logprobs: null, finish_reason: finish } : { index: c, text, logprobs: null, finish_reason: finish })),
        usage,
      });
    });
  }

  /** Per-token time grows with the batch, as decoding a larger batch does. */
  private tokenDelay(): number {
    return this.config.TOKEN_MS + this.config.TOKEN_MS_PER_BATCH * (this.batcher.running - 1);
  }
}
