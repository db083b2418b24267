import type http from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Agent, request, Dispatcher } from 'undici';
import { errorBody, ErrorBody } from '@switchyard/contracts';
import type { AcquireResult } from '@switchyard/load-store';
import { pick } from '@switchyard/routing';
import { AdmissionQueue, QueueOutcome } from './admission-queue';
import type { ProxyRuntime } from './proxy-runtime';

/** OpenAI routes forwarded to instances. */
export const FORWARDED_ROUTES = new Set(['/v1/chat/completions', '/v1/completions', '/v1/embeddings']);
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length']);
/** Errors that mean the instance could not be reached at all: retried elsewhere, and the instance cools down. */
const CONNECT_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);
const NO_EXCLUDE: readonly string[] = [];

export function sendError(res: http.ServerResponse, status: number, body: ErrorBody, headers: Record<string, string> = {}): void {
  if (res.headersSent) return void res.destroy();
  const data = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), ...headers });
  res.end(data);
}

function sseError(message: string): Buffer {
  return Buffer.from(`data: ${JSON.stringify(errorBody(message, 'server_error', 'upstream_error'))}\n\n`);
}

/** The upstream body, passed on chunk by chunk; `onEnd` runs after the last upstream byte and before the client's body ends. */
async function* relay(body: AsyncIterable<Buffer>, sse: boolean, onFirst: () => void, onEnd: () => void): AsyncGenerator<Buffer> {
  let first = true;
  try {
    for await (const chunk of body) {
      if (first) {
        first = false;
        onFirst();
      }
      yield chunk;
    }
  } catch (err) {
    // After the first byte there is no retry: a stream ends with an error event, not a silent cut.
    if (!sse) throw err;
    yield sseError(`upstream failed mid-stream: ${(err as Error).message}`);
  }
  onEnd();
}

/**
 * The data-plane hot path: plain node req/res, one undici Agent, the store's atomic
 * select-and-acquire, failover before the first byte, and a release exactly once.
 */
export class Forwarder {
  private readonly agent: Agent;
  private readonly cooling = new Map<string, number>();
  private seq = 0;
  private localTicket = 0;
  readonly queue: AdmissionQueue;
  /** Upstream calls under way, so a drain that times out can end them. */
  private readonly active = new Set<AbortController>();

  constructor(private readonly rt: ProxyRuntime) {
    // No per-instance connection cap: max_inflight and the admission queue are the limits, visibly.
    this.agent = new Agent({ keepAliveTimeout: 30_000, headersTimeout: rt.config.UPSTREAM_TIMEOUT_S * 1000, bodyTimeout: rt.config.UPSTREAM_TIMEOUT_S * 1000 });
    this.queue = new AdmissionQueue({
      max: rt.config.QUEUE_MAX,
      timeoutMs: rt.config.QUEUE_TIMEOUT_S * 1000,
      tryAcquire: (model) => this.acquire(model, []),
      giveBack: (a) => this.rt.slot(a.instance_id)(),
      depth: rt.queued,
    });
    rt.onCapacity(() => this.queue.kick());
  }

  /** Drain timed out: waiters get 503, upstream calls are aborted (streams end with an error event) and their slots released. */
  abortAll(): void {
    this.queue.settleAll({ kind: 'queue_timeout' });
    for (const abort of this.active) abort.abort(new Error('the proxy is shutting down'));
  }

  close(): Promise<void> {
    return this.agent.close();
  }

  async handle(req: http.IncomingMessage, res: http.ServerResponse, route: string): Promise<void> {
    const { config, metrics } = this.rt;
    const requestId = (req.headers['x-request-id'] as string | undefined) || `${this.rt.proxyId}-${(++this.seq).toString(36)}`;
    res.setHeader('x-request-id', requestId);
    const t0 = performance.now();
    let model: unknown;
    let chosen: string | undefined;
    const abort = new AbortController();
    let held: (() => void) | undefined;
    // One listener for the end of the exchange. Client gone (before or after headers):
    // abort the upstream call first, then give the slot back; then the access log line.
    res.once('close', () => {
      this.active.delete(abort);
      if (!res.writableFinished) abort.abort();
      held?.();
      if (this.rt.logger.isLevelEnabled('info')) {
        this.rt.logger.info({ request_id: requestId, route, model: typeof model === 'string' ? model : null, instance_id: chosen ?? null, status: res.statusCode, complete: res.writableFinished, duration_ms: Math.round(performance.now() - t0) }, 'request');
      }
    });
    const body = await this.readBody(req, config.MAX_BODY_BYTES);
    if (body === 'aborted') return;
    if (!body) return sendError(res, 413, errorBody(`body: larger than MAX_BODY_BYTES (${config.MAX_BODY_BYTES} bytes)`, 'invalid_request_error', 'body_too_large'), { connection: 'close' });
    try {
      model = (JSON.parse(body.toString('utf8')) as { model?: unknown } | null)?.model;
    } catch {
      return sendError(res, 400, errorBody('body: not valid JSON', 'invalid_request_error', 'invalid_json'));
    }
    if (typeof model !== 'string' || !model) return sendError(res, 400, errorBody('model: required, a non-empty string', 'invalid_request_error', 'invalid_field', 'model'));

    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k) && typeof v === 'string') headers[k] = v;
    headers['x-request-id'] = requestId;

    // From here on a drain that times out may end this exchange.
    this.active.add(abort);
    const tried: string[] = [];
    let lastFailure = '';
    for (let attempt = 0; ; attempt++) {
      if (res.destroyed) return;
      let picked: AcquireResult | QueueOutcome;
      if (tried.length === 0 && this.queue.waiting(model)) {
        // Others wait already for this model: first come, first served.
        picked = await this.queue.wait(model, abort.signal);
      } else {
        picked = await this.acquire(model, tried);
        if (picked.kind === 'all_full' && tried.length === 0) picked = await this.queue.wait(model, abort.signal);
      }
      if (picked.kind !== 'acquired') {
        if (picked.kind === 'gone') return;
        if (tried.length) return sendError(res, 502, errorBody(`every instance tried for model '${model}' failed; last: ${lastFailure}`, 'server_error', 'upstream_error'));
        return this.noInstance(res, model, picked.kind);
      }
      const instanceId = picked.instance_id;
      chosen = instanceId;
      metrics.selections.inc({ strategy: config.ROUTING_STRATEGY, instance_id: instanceId });
      const release = this.rt.slot(instanceId);
      held = release;
      if (res.destroyed) return release();
      const started = performance.now();
      let upstream: Dispatcher.ResponseData;
      try {
        upstream = await request(picked.url + route, { method: 'POST', headers, body, dispatcher: this.agent, signal: abort.signal });
      } catch (err) {
        release();
        if (res.destroyed) return;
        if (abort.signal.aborted) return sendError(res, 503, errorBody('the proxy is shutting down; retry', 'service_unavailable', 'draining'), { 'retry-after': '1', connection: 'close' });
        const code = (err as { code?: string }).code ?? '';
        lastFailure = `${instanceId}: ${(err as Error).message}`;
        const unreachable = CONNECT_ERRORS.has(code) || code === 'UND_ERR_SOCKET';
        if (CONNECT_ERRORS.has(code)) this.coolDown(instanceId);
        if (unreachable && attempt < config.MAX_RETRIES) {
          tried.push(instanceId);
          metrics.retries.inc({ reason: 'connect' });
          continue;
        }
        const timeout = code.includes('TIMEOUT');
        return sendError(
          res,
          timeout ? 504 : 502,
          errorBody(`upstream ${lastFailure}`, timeout ? 'timeout_error' : 'server_error', timeout ? 'upstream_timeout' : 'upstream_error'),
        );
      }
      if ((upstream.statusCode === 502 || upstream.statusCode === 503) && attempt < config.MAX_RETRIES) {
        // Nothing has reached the client yet: try another instance.
        upstream.body.resume();
        upstream.body.on('error', () => undefined);
        release();
        lastFailure = `${instanceId}: status ${upstream.statusCode}`;
        tried.push(instanceId);
        metrics.retries.inc({ reason: `status_${upstream.statusCode}` });
        continue;
      }
      const out: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(upstream.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) out[k] = v;
      out['x-switchyard-instance'] = instanceId;
      out['x-request-id'] = requestId;
      res.writeHead(upstream.statusCode, out);
      const sse = String(upstream.headers['content-type'] ?? '').startsWith('text/event-stream');
      const onFirst = () => metrics.upstreamTtfb.observe({ route }, (performance.now() - started) / 1000);
      const onEnd = () => {
        metrics.upstreamDuration.observe({ route }, (performance.now() - started) / 1000);
        // The instance is done: release before the client sees the end, so its next request meets an up-to-date count.
        release();
      };
      try {
        await pipeline(relay(upstream.body as AsyncIterable<Buffer>, sse, onFirst, onEnd), res);
      } catch {
        // Client gone or upstream cut a non-streaming body: 'close' released the slot and aborted the upstream.
        if (!res.destroyed) res.destroy();
      }
      return;
    }
  }

  private noInstance(res: http.ServerResponse, model: string, kind: Exclude<QueueOutcome['kind'] | AcquireResult['kind'], 'acquired' | 'gone'>): void {
    if (kind === 'queue_full') return sendError(res, 429, errorBody(`every instance for model '${model}' is at max_inflight and the queue is full (QUEUE_MAX)`, 'rate_limit_error', 'queue_full'), { 'retry-after': '1' });
    if (kind === 'queue_timeout') return sendError(res, 503, errorBody(`no capacity for model '${model}' freed within the queue timeout`, 'service_unavailable', 'queue_timeout'), { 'retry-after': '1' });
    if (kind === 'unknown_model') return sendError(res, 404, errorBody(`model '${model}' is not served by any instance`, 'not_found_error', 'model_not_found', 'model'));
    const why = kind === 'all_full' ? 'every instance is at max_inflight' : 'no instance is alive';
    sendError(res, 503, errorBody(`no instance available for model '${model}': ${why}`, 'service_unavailable', 'no_instance_available'), { 'retry-after': '1' });
  }

  /** The store's atomic select-and-acquire; while the store is unreachable, a local pick over this proxy's own counts. */
  private async acquire(model: string, tried: string[], avoidCooling = true): Promise<AcquireResult> {
    const exclude = avoidCooling ? this.excluded(tried) : tried;
    let result: AcquireResult | undefined;
    if (!this.rt.degraded) {
      this.rt.pendingAcquires += 1;
      try {
        result = await this.rt.store.acquire({ proxyId: this.rt.proxyId, model, strategy: this.rt.config.ROUTING_STRATEGY, exclude });
      } catch (err) {
        this.rt.storeFailed(err);
      } finally {
        this.rt.pendingAcquires -= 1;
      }
    }
    result ??= this.localAcquire(model, exclude);
    // Instances cooling down are a preference, not a wall: with nothing else left, try them again.
    if (result.kind !== 'acquired' && result.kind !== 'unknown_model' && exclude.length > tried.length) return this.acquire(model, tried, false);
    return result;
  }

  private localAcquire(model: string, exclude: readonly string[]): AcquireResult {
    const { registry, counts, config } = this.rt;
    if (!registry.hasModel(model)) return { kind: 'unknown_model' };
    const outcome = pick(config.ROUTING_STRATEGY, registry.candidates(model, counts.view, exclude), { ticket: this.localTicket++, rand1: Math.random(), rand2: Math.random() });
    if (outcome.kind !== 'picked') return outcome;
    const inst = registry.get(outcome.instance_id);
    return { kind: 'acquired', instance_id: outcome.instance_id, url: inst?.url ?? '', inflight: (counts.view.get(outcome.instance_id) ?? 0) + 1 };
  }

  private excluded(tried: string[]): readonly string[] {
    if (this.cooling.size === 0) return tried.length ? tried : NO_EXCLUDE;
    const now = Date.now();
    const out = tried.slice();
    for (const [id, until] of this.cooling) {
      if (until <= now) this.cooling.delete(id);
      else if (!out.includes(id)) out.push(id);
    }
    return out;
  }

  private coolDown(instanceId: string): void {
    if (this.rt.config.FAILURE_COOLDOWN_S > 0) this.cooling.set(instanceId, Date.now() + this.rt.config.FAILURE_COOLDOWN_S * 1000);
  }

  private async readBody(req: http.IncomingMessage, limit: number): Promise<Buffer | null | 'aborted'> {
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const c of req) {
        size += (c as Buffer).length;
        if (size > limit) return null;
        chunks.push(c as Buffer);
      }
    } catch {
      return 'aborted';
    }
    return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
  }
}
