import type http from 'node:http';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Agent, request, Dispatcher } from 'undici';
import { errorBody, ErrorBody } from '@switchyard/contracts';
import { keyStoreFor } from '@switchyard/load-store';
import type { Affinity } from '@switchyard/load-store';
import type { QueueOutcome } from './admission-queue';
import { affinityOf, bindWhole, streamedIdBinder } from './affinity';
import type { Exchange, Slot } from './exchange';
import { cameThroughSwitchyard, requestHeadersToDrop, responseHeadersToDrop, viaUpstream } from './headers';
import { KeyGate } from './keys';
import type { ProxyRuntime } from './proxy-runtime';
import { modelOf, RESPONSES_ROUTE } from './routes';
import { NO_EXCLUDE } from './slots';
import { askForUsage, SseTap, UsageStripper, usageOfBody } from './sse-tap';

export { FORWARDED_ROUTES } from './routes';
/** Hop-by-hop headers (RFC 9110 §7.6.1) plus what undici sets itself; headers named in `Connection:` are dropped too. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length', 'expect']);
/** Errors that mean the instance could not be reached at all: retried elsewhere, and the instance cools down. */
const CONNECT_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);
/** Upstream answers that say "not now, here": tried elsewhere; on the last try returned as they are. */
const RETRY_STATUSES = new Set([429, 502, 503]);
/** Whole (non-streaming) bodies up to this size are read, then sent with their headers in one write; larger ones are streamed. */
const WHOLE_BODY_MAX = 1024 * 1024;
/** Enough of an upstream error body to return it; longer ones are cut. */
const FAILURE_BODY_MAX = 64 * 1024;

export function sendError(res: http.ServerResponse, status: number, body: ErrorBody, headers: Record<string, string> = {}): void {
  if (res.headersSent) return void res.destroy();
  const data = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), ...headers });
  res.end(data);
}

function sseError(message: string): Buffer {
  return Buffer.from(`data: ${JSON.stringify(errorBody(message, 'server_error', 'upstream_error'))}\n\n`);
}

/** Headers to pass on: not hop-by-hop, not named in this message's own `Connection:` header, and not in `withheld` (see headers.ts). */
function endToEnd(headers: Record<string, string | string[] | undefined>, keepLength: boolean, withheld?: ReadonlySet<string>): Record<string, string | string[]> {
  const named = headers.connection;
  const drop = typeof named === 'string' && named !== 'keep-alive' && named !== 'close' ? new Set(named.toLowerCase().split(',').map((s) => s.trim())) : undefined;
  const out: Record<string, string | string[]> = {};
  for (const k in headers) {
    const v = headers[k];
    if (v === undefined || (HOP_BY_HOP.has(k) && !(keepLength && k === 'content-length')) || drop?.has(k) || withheld?.has(k)) continue;
    out[k] = v;
  }
  return out;
}

/** A whole upstream body, chunk by chunk into one buffer. */
function collect(body: Readable): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    body.on('data', (c: Buffer) => chunks.push(c));
    body.once('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    body.once('error', reject);
  });
}

/** An attempt that did not answer the client: why, and the upstream's own answer when it gave one. */
interface Failure {
  message: string;
  reason: string;
  answer?: { status: number; headers: Record<string, string | string[]>; body: Buffer };
}

type BodyResult = Buffer | 'too_large' | 'timeout' | 'aborted';

function readBody(req: http.IncomingMessage, limit: number, timeoutMs: number): Promise<BodyResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (result: BodyResult) => {
      clearTimeout(timer);
      req.off('data', onData).off('end', onEnd).off('error', onGone).off('aborted', onGone);
      resolve(result);
    };
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > limit) return done('too_large');
      chunks.push(c);
    };
    const onEnd = () => done(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
    const onGone = () => done('aborted');
    const timer = setTimeout(() => done('timeout'), timeoutMs);
    req.on('data', onData).on('end', onEnd).on('error', onGone).on('aborted', onGone);
  });
}

async function readCapped(body: Dispatcher.ResponseData['body']): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of body as AsyncIterable<Buffer>) {
    if (size < FAILURE_BODY_MAX) chunks.push(c);
    size += c.length;
  }
  return Buffer.concat(chunks).subarray(0, FAILURE_BODY_MAX);
}

/**
 * The data-plane hot path, plain node req/res: parse → admit (queue) → attempt loop
 * (a Slot from the ledger per attempt, failover before the first byte) → stream back.
 * The Exchange's end handler does the rest (abort, release, metrics, log).
 */
export class Forwarder {
  private readonly agent: Agent;
  private seq = 0;
  private readonly affinityTtlMs: number;
  /** API_KEYS=required; with it off, no per-request work at all. */
  private readonly keys?: KeyGate;
  private readonly requestWithheld: ReadonlySet<string>;
  private readonly responseWithheld?: ReadonlySet<string>;

  constructor(private readonly rt: ProxyRuntime) {
    if (rt.config.API_KEYS === 'required') this.keys = new KeyGate(keyStoreFor(rt.store), { logger: rt.logger, onStoreError: () => rt.metrics.storeErrors.inc() });
    this.requestWithheld = requestHeadersToDrop(rt.config.FORWARD_CLIENT_AUTH);
    this.responseWithheld = responseHeadersToDrop(rt.config.FORWARD_CLIENT_AUTH);
    // No per-instance connection cap: max_inflight and the admission queue are the limits, visibly.
    this.affinityTtlMs = rt.config.AFFINITY_TTL_S * 1000;
    this.agent = new Agent({ keepAliveTimeout: 30_000, headersTimeout: rt.config.UPSTREAM_TIMEOUT_S * 1000, bodyTimeout: rt.config.UPSTREAM_TIMEOUT_S * 1000 });
  }

  /** Drain timed out: waiters get 503, upstream calls are aborted (streams end with an error event) and their slots released. */
  abortAll(): void {
    this.rt.queue.settleAll({ kind: 'queue_timeout' });
    const reason = new Error('the proxy is shutting down');
    for (const ex of this.rt.exchanges.all) ex.abortUpstream(reason);
  }

  async close(): Promise<void> {
    await this.keys?.close();
    return this.agent.close();
  }

  /** One access log line per forwarded exchange, at its end. */
  log(ex: Exchange, route: string): void {
    if (!this.rt.logger.isLevelEnabled('info')) return;
    this.rt.logger.info(
      {
        request_id: ex.res.getHeader('x-request-id') ?? null,
        route,
        model: ex.model,
        instance_id: ex.instanceId,
        status: ex.status,
        complete: ex.complete,
        duration_ms: Math.round(performance.now() - ex.startedAt),
        ttft_ms: ex.firstTokenAt === null ? null : Math.round(ex.firstTokenAt - ex.startedAt),
        queue_wait_ms: Math.round(ex.queueWaitMs),
        attempts: ex.attempts,
        prompt_tokens: ex.usage?.prompt_tokens ?? null,
        completion_tokens: ex.usage?.completion_tokens ?? null,
        client_address: ex.req.socket.remoteAddress ?? null,
      },
      'request',
    );
  }

  async handle(ex: Exchange, route: string): Promise<void> {
    const { req, res } = ex;
    const { config } = this.rt;
    ex.route = route;
    this.rt.tracing?.begin(ex);
    const requestId = (req.headers['x-request-id'] as string | undefined) || `${this.rt.proxyId}-${(++this.seq).toString(36)}`;
    res.setHeader('x-request-id', requestId);

    // parse
    const body = await readBody(req, config.MAX_BODY_BYTES, config.REQUEST_BODY_TIMEOUT_S * 1000);
    if (body === 'aborted') return;
    if (body === 'too_large') return sendError(res, 413, errorBody(`body: larger than MAX_BODY_BYTES (${config.MAX_BODY_BYTES} bytes)`, 'invalid_request_error', 'body_too_large'), { connection: 'close' });
    if (body === 'timeout') return sendError(res, 408, errorBody(`body: not received within REQUEST_BODY_TIMEOUT_S (${config.REQUEST_BODY_TIMEOUT_S} s)`, 'invalid_request_error', 'body_timeout'), { connection: 'close' });
    // A request that already passed a Switchyard proxy (an instance URL pointing back at one) stops here, before any instance.
    if (cameThroughSwitchyard(req.headers.via)) return sendError(res, 508, errorBody('loop detected: this request already passed a Switchyard proxy (via header); an instance URL points back at a proxy', 'server_error', 'loop_detected'));
    const read = modelOf(route, req.headers['content-type'], body);
    if (!('model' in read)) return sendError(res, read.status, read.error);
    const { model, parsed } = read;
    ex.model = model;
    const routeExclusion = this.rt.registry.routeExclusion(model, route);
    if (routeExclusion?.none) return sendError(res, 404, errorBody(`no instance serving model '${model}' lists ${route} in its endpoints`, 'not_found_error', 'route_not_served', 'model'));
    if (this.keys) {
      const refused = await this.keys.admit(ex, route, parsed, body.length);
      if (refused) return sendError(res, refused.status, refused.body, refused.headers);
    }
    const affinity = affinityOf(route, parsed, req.headers, this.affinityTtlMs, config.SESSION_AFFINITY);
    const headers = endToEnd(req.headers, false, this.requestWithheld) as Record<string, string>;
    headers['x-request-id'] = requestId;
    headers.via = viaUpstream(req.headers.via);
    this.rt.tracing?.inject(ex, headers);
    // USAGE_FROM_STREAMS: streams that did not ask for usage are sent asking, and stripped of it on the way back.
    const usagePlan = config.USAGE_FROM_STREAMS && parsed ? askForUsage(route, parsed, body) : undefined;
    // A pipelined request waits for the responses before it, holding nothing meanwhile.
    if (!(await ex.turn())) return;

    // admit, then the attempt loop
    const tried: string[] = [];
    let last: Failure | undefined;
    for (let attempt = 0; ; attempt++) {
      const admitted = await this.admit(ex, model, tried, routeExclusion?.exclude ?? NO_EXCLUDE, affinity);
      if (admitted.kind !== 'acquired') {
        if (admitted.kind === 'gone' || ex.ended) return;
        if (last) return this.answerFailure(res, model, last);
        return this.noInstance(res, model, admitted.kind);
      }
      ex.hold(admitted.slot);
      ex.attempts = attempt + 1;
      if (ex.ended) return;
      if (admitted.slot.affinity === 'gone' && tried.length === 0) {
        this.rt.logger.info({ request_id: requestId, model, affinity: affinity?.key, instance_id: admitted.slot.instanceId }, 'affinity: the bound instance cannot serve now; routed by strategy');
      }
      this.rt.metrics.countSelection(config.ROUTING_STRATEGY, admitted.slot.instanceId);
      const failure = await this.attempt(ex, route, admitted.slot, headers, usagePlan?.body ?? body, attempt === config.MAX_RETRIES, usagePlan?.strip ?? false);
      if (!failure) return;
      last = failure;
      tried.push(admitted.slot.instanceId);
      this.rt.metrics.retries.inc({ reason: failure.reason });
    }
  }

  /** The first attempt queues when every instance is full (or others wait already: first come, first served); retries never queue. */
  private async admit(ex: Exchange, model: string, tried: string[], offRoute: readonly string[], affinity: Affinity | undefined): Promise<QueueOutcome | { kind: 'all_full' }> {
    const { queue, slots } = this.rt;
    if (tried.length === 0 && queue.waiting(model)) return this.queued(ex, model, offRoute, affinity);
    // Instances that do not serve this route never get it: excluded like the ones already tried.
    const picked = await slots.acquire(model, offRoute.length ? [...offRoute, ...tried] : tried, affinity);
    if (picked.kind === 'all_full' && tried.length === 0) return this.queued(ex, model, offRoute, affinity);
    return picked;
  }

  private async queued(ex: Exchange, model: string, offRoute: readonly string[], affinity: Affinity | undefined): Promise<QueueOutcome> {
    const since = performance.now();
    try {
      return await this.rt.queue.wait(model, ex.signal, offRoute, affinity);
    } finally {
      ex.queueWaitMs += performance.now() - since;
    }
  }

  /** One try on one instance; a Failure means "try another", undefined means the client has its answer (or is gone). */
  private async attempt(ex: Exchange, route: string, slot: Slot, headers: Record<string, string>, body: Buffer, lastTry: boolean, stripUsage: boolean): Promise<Failure | undefined> {
    const { res } = ex;
    const { metrics } = this.rt;
    const started = performance.now();
    // The instance's own key replaces whatever the client sent; otherwise the client's (when forwarded) stays.
    // The store picked an instance registered since this proxy's last pull: read it first (its key, its endpoints).
    if (!this.rt.registry.get(slot.instanceId)) {
      await this.rt.pullRegistry();
      if (this.rt.registry.get(slot.instanceId)?.endpoints.includes(route) === false) {
        ex.releaseSlot();
        return { message: `${slot.instanceId}: does not list ${route}`, reason: 'route' };
      }
    }
    const auth = this.rt.registry.get(slot.instanceId)?.authorization ?? (this.requestWithheld.has('authorization') ? undefined : ex.req.headers.authorization);
    if (auth !== undefined) headers.authorization = auth;
    else delete headers.authorization;
    let upstream: Dispatcher.ResponseData;
    try {
      upstream = await request(slot.url + route, { method: 'POST', headers, body, dispatcher: this.agent, signal: ex.signal });
    } catch (err) {
      ex.releaseSlot();
      if (ex.ended) return undefined;
      if (ex.signal.aborted) return void sendError(res, 503, errorBody('the proxy is shutting down; retry', 'service_unavailable', 'draining'), { 'retry-after': '1', connection: 'close' });
      const code = (err as { code?: string }).code ?? '';
      const message = `${slot.instanceId}: ${(err as Error).message}`;
      if (CONNECT_ERRORS.has(code)) this.rt.slots.coolDown(slot.instanceId);
      if ((CONNECT_ERRORS.has(code) || code === 'UND_ERR_SOCKET') && !lastTry) return { message, reason: 'connect' };
      const timeout = code.includes('TIMEOUT');
      return void sendError(res, timeout ? 504 : 502, errorBody(`upstream ${message}`, timeout ? 'timeout_error' : 'server_error', timeout ? 'upstream_timeout' : 'upstream_error'));
    }
    if (RETRY_STATUSES.has(upstream.statusCode) && !lastTry) {
      // Nothing has reached the client yet: keep this answer in case no other instance does better.
      const status = upstream.statusCode;
      const answer = { status, headers: endToEnd(upstream.headers, false, this.responseWithheld), body: await readCapped(upstream.body).catch(() => Buffer.alloc(0)) };
      ex.releaseSlot();
      return { message: `${slot.instanceId}: status ${status}`, reason: `status_${status}`, answer };
    }
    const sse = String(upstream.headers['content-type'] ?? '').startsWith('text/event-stream');
    // A streamed body's length is the stream's business; a whole one keeps the upstream's content-length.
    const out = endToEnd(upstream.headers, !sse, this.responseWithheld);
    out['x-switchyard-instance'] = slot.instanceId;
    const answer = upstream.body as Readable;
    const onEnd = () => {
      metrics.observeUpstream(route, (performance.now() - started) / 1000);
      // The instance is done: release before the client sees the end, so its next request meets an up-to-date count.
      ex.releaseSlot();
    };
    if (!sse && Number(upstream.headers['content-length']) <= WHOLE_BODY_MAX) {
      // A small whole body: read, then written with its headers at once; no stream plumbing per request.
      metrics.observeTtfb(route, (performance.now() - started) / 1000);
      let whole: Buffer;
      try {
        whole = await collect(answer);
      } catch (err) {
        if (ex.ended) return undefined;
        return void sendError(res, 502, errorBody(`upstream ${slot.instanceId}: body cut: ${(err as Error).message}`, 'server_error', 'upstream_error'));
      }
      if (route === RESPONSES_ROUTE && upstream.statusCode === 200) bindWhole(slot, whole);
      onEnd();
      const ok = upstream.statusCode < 300;
      // Usage from the body's `usage` object, found from the end without parsing the whole body.
      if (ok) {
        ex.usage = usageOfBody(whole);
        ex.firstTokenAt = performance.now();
      }
      res.writeHead(upstream.statusCode, out);
      res.end(whole);
      return undefined;
    }
    res.writeHead(upstream.statusCode, out);
    answer.once('data', () => metrics.observeTtfb(route, (performance.now() - started) / 1000));
    answer.once('end', onEnd);
    // Tokens, TTFT and inter-token gaps read beside the pipeline, from the chunks as they pass.
    if (sse && upstream.statusCode < 300) {
      const binder = route === RESPONSES_ROUTE && upstream.statusCode === 200 ? streamedIdBinder(slot) : undefined;
      SseTap.attach(answer, ex, metrics.series(ex.model, this.rt.registry.hasModel(ex.model ?? '')).itl, binder);
    }
    try {
      // `end: false`: an upstream failure must not destroy the response before an SSE stream gets its error event.
      if (sse && stripUsage) await pipeline(answer, new UsageStripper(), res, { end: false });
      else await pipeline(answer, res, { end: false });
      res.end();
    } catch (err) {
      // After the first byte there is no retry: a stream ends with an error event, not a silent cut. A client gone has ended the exchange.
      if (sse && !ex.ended && !res.destroyed) res.end(sseError(`upstream failed mid-stream: ${(err as Error).message}`));
      else res.destroy();
    }
    return undefined;
  }

  /** Every instance tried failed: the last upstream answer as it was (status, body, Retry-After), else a 502 naming the last failure. */
  private answerFailure(res: http.ServerResponse, model: string, last: Failure): void {
    if (!last.answer) return sendError(res, 502, errorBody(`every instance tried for model '${model}' failed; last: ${last.message}`, 'server_error', 'upstream_error'));
    const { status, headers, body } = last.answer;
    res.writeHead(status, { ...headers, 'content-length': body.length });
    res.end(body);
  }

  private noInstance(res: http.ServerResponse, model: string, kind: 'queue_full' | 'queue_timeout' | 'unknown_model' | 'none_alive' | 'all_full'): void {
    if (kind === 'queue_full') return sendError(res, 429, errorBody(`every instance for model '${model}' is at max_inflight and the queue is full (QUEUE_MAX)`, 'rate_limit_error', 'queue_full'), { 'retry-after': '1' });
    if (kind === 'queue_timeout') return sendError(res, 503, errorBody(`no capacity for model '${model}' freed within the queue timeout`, 'service_unavailable', 'queue_timeout'), { 'retry-after': '1' });
    if (kind === 'unknown_model') return sendError(res, 404, errorBody(`model '${model}' is not served by any instance`, 'not_found_error', 'model_not_found', 'model'));
    const why = kind === 'all_full' ? 'every instance is at max_inflight' : 'no instance is alive';
    sendError(res, 503, errorBody(`no instance available for model '${model}': ${why}`, 'service_unavailable', 'no_instance_available'), { 'retry-after': '1' });
  }
}
