import { createHash } from 'node:crypto';
import { API_KEY_WINDOW_S, ApiKeyRecord, ApiKeyUsage } from '@switchyard/contracts';
import { EPSILON, WINDOW_MS } from './key-names';

/** What a key's limit leaves after an admission (OpenAI's x-ratelimit-* headers). */
export interface LimitState {
  limit: number;
  remaining: number;
  /** Until the bucket is full again. */
  resetMs: number;
}

/** What the proxy needs to serve a key from its own memory while the store is unreachable. */
export interface KeyGrant {
  id: string;
  models: string[] | null;
  rpm: number | null;
  tpm: number | null;
}

export type KeyAdmission =
  | { kind: 'unknown' }
  | { kind: 'model_not_allowed'; id: string }
  | {
      kind: 'admitted' | 'limited';
      grant: KeyGrant;
      /** Which limit refused it (limited only). */
      limitedBy: 'requests' | 'tokens' | null;
      requests: LimitState | null;
      tokens: LimitState | null;
      /** When a refused request would fit (limited only). */
      retryAfterMs: number;
    };

/** A key's record with its limit state and usage, as read at `now`. */
export interface StoredKey {
  record: ApiKeyRecord;
  usage: ApiKeyUsage;
}

/** A new or changed key; `created_at` absent: now (or kept, for an update). */
export type KeyPut = Omit<ApiKeyRecord, 'created_at'> & { created_at?: number };

/**
 * Client API keys and their limits, shared by every proxy: one atomic admission per request
 * (record, models, both limits), corrections batched, and the control plane's writes and reads.
 */
export interface KeyStore {
  admit(sha256: string, model: string, estimatedTokens: number): Promise<KeyAdmission>;
  /** Token corrections by sha256 (actual minus estimated), applied together; revoked keys are skipped. */
  settle(deltas: ReadonlyMap<string, number>): Promise<void>;
  /** 'conflict' when the same secret belongs to another id. */
  put(key: KeyPut): Promise<'created' | 'updated' | 'conflict'>;
  revoke(id: string): Promise<boolean>;
  get(id: string): Promise<StoredKey | null>;
  list(): Promise<StoredKey[]>;
}

/** The only form in which a secret is kept or compared. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** A key's limit state and this minute's counters, as both stores keep them. */
export interface LimitFields {
  /** When each bucket is full again (ms, store clock); 0 = never used. */
  rt: number;
  tt: number;
  /** The clock minute wr and wt count in. */
  wm: number;
  wr: number;
  wt: number;
}

/** What a key's limits leave at `now`: null without a limit. */
export function remaining(limit: number | null, fullAt: number, now: number): number | null {
  if (!limit) return null;
  const used = Math.max(fullAt - now, 0);
  return Math.max(0, Math.floor(((WINDOW_MS - used) * limit) / WINDOW_MS + EPSILON));
}

export function usageOf(r: Pick<ApiKeyRecord, 'rpm' | 'tpm'>, f: LimitFields, now: number): ApiKeyUsage {
  const current = f.wm === Math.floor(now / WINDOW_MS);
  return {
    window_s: API_KEY_WINDOW_S,
    requests: current ? f.wr : 0,
    tokens: current ? Math.round(f.wt) : 0,
    remaining_requests: remaining(r.rpm, f.rt, now),
    remaining_tokens: remaining(r.tpm, f.tt, now),
  };
}
