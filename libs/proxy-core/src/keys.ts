import type { ErrorBody } from '@switchyard/contracts';
import { errorBody } from '@switchyard/contracts';
import { hashSecret, KeyAdmission, KeyGrant, KeyStore, LimitState, MemoryKeyStore } from '@switchyard/load-store';
import type { Logger } from 'pino';
import type { Exchange } from './exchange';

/** Completion tokens assumed at admission when a request names no max_tokens (corrected by the answer's usage). */
export const DEFAULT_COMPLETION_TOKENS = 256;
/** While Redis is unreachable, a key admitted within this long is served on this proxy's own limits. */
export const OUTAGE_GRACE_MS = 60_000;
/** Token corrections are gathered per key and sent together this often, off the request path. */
const SETTLE_EVERY_MS = 250;

/** `Authorization: Bearer <key>` (scheme in any case, RFC 9110 §11.1), else `x-api-key`. */
const BEARER = /^bearer +(\S+) *$/i;

export function presentedKey(headers: Record<string, string | string[] | undefined>): string | undefined {
  const auth = headers.authorization;
  if (typeof auth === 'string' && auth) return BEARER.exec(auth)?.[1] ?? '';
  const x = headers['x-api-key'];
  return typeof x === 'string' && x ? x.trim() : undefined;
}

/** Prompt bytes / 4 plus the completion asked for (max_completion_tokens, max_tokens, else DEFAULT_COMPLETION_TOKENS; none for embeddings). */
export function estimateTokens(route: string, request: Record<string, unknown> | null, bodyBytes: number): number {
  const asked = [request?.max_completion_tokens, request?.max_tokens].find((v): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0);
  const completion = asked ?? (route === '/v1/embeddings' ? 0 : DEFAULT_COMPLETION_TOKENS);
  return Math.ceil(bodyBytes / 4) + Math.round(completion);
}

/** OpenAI's reset format: `20ms`, `1.5s`, `6m0s`. */
export function formatReset(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  const s = ms / 1000;
  if (s < 60) return `${Number(s.toFixed(3))}s`;
  return `${Math.floor(s / 60)}m${Math.ceil(s % 60)}s`;
}

/** OpenAI masks a wrong key the same way: enough to recognise it, not enough to use it. */
function masked(key: string): string {
  return key.length <= 12 ? '*'.repeat(key.length) : `${key.slice(0, 6)}${'*'.repeat(8)}${key.slice(-4)}`;
}

function rateHeaders(a: Extract<KeyAdmission, { grant: KeyGrant }>): Record<string, string> {
  const h: Record<string, string> = {};
  const put = (kind: 'requests' | 'tokens', s: LimitState | null) => {
    if (!s) return;
    h[`x-ratelimit-limit-${kind}`] = String(s.limit);
    h[`x-ratelimit-remaining-${kind}`] = String(s.remaining);
    h[`x-ratelimit-reset-${kind}`] = formatReset(s.resetMs);
  };
  put('requests', a.requests);
  put('tokens', a.tokens);
  return h;
}

export interface KeyGateOptions {
  logger: Logger;
  /** Counts store failures (the proxy's store error metric). */
  onStoreError(): void;
  now?: () => number;
}

type Answer = { status: number; body: ErrorBody; headers?: Record<string, string> };

/**
 * Client API keys at the proxy (API_KEYS=required): after the body is parsed, before the queue.
 * One store call per request (the admit-key script: record, models, both limits); revocation
 * shows on the next request on every proxy, since nothing is cached while the store answers.
 * While it does not, keys this proxy admitted in the last minute are served on its own limits
 * (a Redis blink fails no request of a known client); other keys get 503.
 */
export class KeyGate {
  private readonly recent = new Map<string, { grant: KeyGrant; at: number }>();
  private readonly local: MemoryKeyStore;
  private pending = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private storeDown = false;
  private prunedAt = 0;
  private readonly now: () => number;

  constructor(private readonly store: KeyStore, private readonly options: KeyGateOptions) {
    this.now = options.now ?? Date.now;
    this.local = new MemoryKeyStore(this.now);
    this.timer = setInterval(() => void this.flush(), SETTLE_EVERY_MS);
    this.timer.unref();
  }

  /**
   * Checks the exchange's key against the model and the limits. Undefined: admitted, with the
   * x-ratelimit-* headers set on the response; else the answer to send instead.
   */
  async admit(ex: Exchange, route: string, request: Record<string, unknown> | null, bodyBytes: number): Promise<Answer | undefined> {
    const key = presentedKey(ex.req.headers);
    if (!key) {
      return { status: 401, body: errorBody("You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", 'invalid_request_error', 'invalid_api_key') };
    }
    const model = ex.model ?? '';
    const sha = hashSecret(key);
    const estimate = estimateTokens(route, request, bodyBytes);
    let a: KeyAdmission;
    try {
      a = await this.store.admit(sha, model, estimate);
      this.storeAnswered();
    } catch (err) {
      const known = this.recent.get(sha);
      this.storeFailed(err);
      if (!known || this.now() - known.at > OUTAGE_GRACE_MS) {
        return { status: 503, body: errorBody('API keys cannot be checked: the store is unreachable; retry', 'service_unavailable', 'store_unreachable'), headers: { 'retry-after': '1' } };
      }
      a = this.local.admitNow(sha, model, estimate);
    }
    if (a.kind === 'unknown') {
      this.recent.delete(sha);
      return { status: 401, body: errorBody(`Incorrect API key provided: ${masked(key)}. Ask your gateway operator for a key (switchyard keys create).`, 'invalid_request_error', 'invalid_api_key') };
    }
    if (a.kind === 'model_not_allowed') {
      return { status: 403, body: errorBody(`model: the API key ${a.id} may not use model '${model}'`, 'permission_error', 'model_not_allowed', 'model') };
    }
    this.remember(sha, a.grant);
    const headers = rateHeaders(a);
    if (a.kind === 'limited') {
      const retryS = Math.max(1, Math.ceil(a.retryAfterMs / 1000));
      const limit = a.limitedBy === 'tokens' ? a.tokens : a.requests;
      const what = a.limitedBy === 'tokens' ? 'tokens per min (TPM)' : 'requests per min (RPM)';
      const used = limit ? limit.limit - limit.remaining : 0;
      const requested = a.limitedBy === 'tokens' ? estimate : 1;
      const message = `Rate limit reached for ${model} on ${what} for API key ${a.grant.id}: Limit ${limit?.limit}, Used ${used}, Requested ${requested}. Please try again in ${formatReset(a.retryAfterMs)}.`;
      return { status: 429, body: errorBody(message, 'rate_limit_error', 'rate_limit_exceeded'), headers: { ...headers, 'retry-after': String(retryS), 'retry-after-ms': String(Math.max(0, a.retryAfterMs)) } };
    }
    for (const name in headers) ex.res.setHeader(name, headers[name]);
    // At the exchange's end, what the answer's usage says replaces the estimate (batched, off the request path).
    ex.res.once('close', () => this.settle(ex, sha, estimate));
    return undefined;
  }

  /** The usage the answer reported, or, when nothing was generated (an error before any instance answered), none at all. */
  private settle(ex: Exchange, sha: string, estimate: number): void {
    let actual: number | undefined;
    if (ex.usage) actual = ex.usage.prompt_tokens + ex.usage.completion_tokens;
    else if (ex.instanceId === null && ex.status !== 499) actual = 0;
    if (actual === undefined || actual === estimate) return;
    this.pending.set(sha, (this.pending.get(sha) ?? 0) + actual - estimate);
  }

  async flush(): Promise<void> {
    this.prune();
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await this.store.settle(batch);
    } catch {
      // The local limits take it during an outage; the shared buckets keep the estimates.
      await this.local.settle(batch);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  /** Keys not seen for the grace period leave this proxy's memory (and its outage limits) once a minute. */
  private prune(): void {
    const now = this.now();
    if (now - this.prunedAt < OUTAGE_GRACE_MS) return;
    this.prunedAt = now;
    for (const [sha, { grant, at }] of this.recent) {
      if (now - at <= OUTAGE_GRACE_MS) continue;
      this.recent.delete(sha);
      void this.local.revoke(grant.id);
    }
  }

  private remember(sha: string, grant: KeyGrant): void {
    const known = this.recent.get(sha);
    if (known) {
      known.at = this.now();
      if (known.grant.rpm === grant.rpm && known.grant.tpm === grant.tpm && String(known.grant.models) === String(grant.models)) return;
    }
    this.recent.set(sha, { grant, at: this.now() });
    this.local.putNow({ ...grant, name: grant.id, prefix: '', sha256: sha, source: 'api' });
  }

  private storeFailed(err: unknown): void {
    this.options.onStoreError();
    if (this.storeDown) return;
    this.storeDown = true;
    this.options.logger.warn(`store unreachable for API keys (${(err as Error)?.message ?? String(err)}): keys admitted in the last ${OUTAGE_GRACE_MS / 1000} s are served on this proxy's own limits, others get 503`);
  }

  private storeAnswered(): void {
    if (!this.storeDown) return;
    this.storeDown = false;
    this.options.logger.info('store reachable again: API keys are checked in the store again');
  }
}
