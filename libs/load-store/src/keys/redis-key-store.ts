import type { Cluster, Redis } from 'ioredis';
import type { ApiKeyRecord } from '@switchyard/contracts';
import { KEY_IDS, KEY_RECORD_PREFIX, keyRecordKey } from './key-names';
import { KeyAdmission, KeyPut, KeyStore, LimitState, StoredKey, usageOf } from './key-store';
import { ADMIT_KEY } from './scripts/admit-key';
import { PUT_KEY } from './scripts/put-key';
import { READ_FIELDS, READ_KEYS } from './scripts/read-keys';
import { REVOKE_KEY } from './scripts/revoke-key';
import { SETTLE_KEYS } from './scripts/settle-keys';

const SCRIPTS = { syKeyAdmit: ADMIT_KEY, syKeySettle: SETTLE_KEYS, syKeyPut: PUT_KEY, syKeyRevoke: REVOKE_KEY, syKeyRead: READ_KEYS };
type ScriptName = keyof typeof SCRIPTS;
type ScriptFn = (key: string, ...args: (string | number)[]) => Promise<unknown>;

/** Models as the admit script finds them: one plain substring search, no JSON decoding per request. */
const packModels = (models: string[] | null): string => (models ? `\n${models.join('\n')}\n` : '');
const unpackModels = (raw: string): string[] | null => (raw ? raw.slice(1, -1).split('\n') : null);
const limitOf = (raw: string): number | null => (Number(raw) > 0 ? Number(raw) : null);
const limitState = (limit: number, remaining: number, resetMs: number): LimitState | null => (limit > 0 ? { limit, remaining, resetMs } : null);

/**
 * Client API keys in Redis, on the connection the load store already has (the proxy's short
 * timeouts and auto-pipelining, the control plane's patient ones). Secrets never reach it: only
 * their sha256.
 */
export class RedisKeyStore implements KeyStore {
  constructor(private readonly redis: Redis | Cluster) {
    for (const [name, lua] of Object.entries(SCRIPTS)) redis.defineCommand(name, { numberOfKeys: 1, lua });
  }

  private run(name: ScriptName, key: string, ...args: (string | number)[]): Promise<unknown> {
    const fn = (this.redis as unknown as Record<ScriptName, ScriptFn>)[name];
    return fn.call(this.redis, key, ...args);
  }

  async admit(sha256: string, model: string, estimatedTokens: number): Promise<KeyAdmission> {
    const r = (await this.run('syKeyAdmit', keyRecordKey(sha256), model, Math.max(0, Math.round(estimatedTokens)))) as (number | string)[];
    const status = r[0] as number;
    if (status === 0) return { kind: 'unknown' };
    const id = String(r[1]);
    if (status === 2) return { kind: 'model_not_allowed', id };
    const [rpm, remReq, resetReq, tpm, remTok, resetTok, retry] = (r.slice(2, 9) as number[]).map(Number);
    return {
      kind: status === 1 ? 'admitted' : 'limited',
      grant: { id, models: unpackModels(String(r[9] ?? '')), rpm: limitOf(String(rpm)), tpm: limitOf(String(tpm)) },
      limitedBy: status === 3 ? 'requests' : status === 4 ? 'tokens' : null,
      requests: limitState(rpm, remReq, resetReq),
      tokens: limitState(tpm, remTok, resetTok),
      retryAfterMs: retry,
    };
  }

  async settle(deltas: ReadonlyMap<string, number>): Promise<void> {
    if (deltas.size === 0) return;
    const args: (string | number)[] = [];
    for (const [sha, d] of deltas) args.push(sha, Math.round(d));
    await this.run('syKeySettle', KEY_IDS, KEY_RECORD_PREFIX, ...args);
  }

  async put(key: KeyPut): Promise<'created' | 'updated' | 'conflict'> {
    const r = await this.run('syKeyPut', KEY_IDS, KEY_RECORD_PREFIX, key.sha256, key.id, key.name, key.prefix, packModels(key.models), key.rpm ?? 0, key.tpm ?? 0, key.source, key.created_at ?? '');
    return r === 1 ? 'created' : r === 0 ? 'updated' : 'conflict';
  }

  async revoke(id: string): Promise<boolean> {
    return (await this.run('syKeyRevoke', KEY_IDS, KEY_RECORD_PREFIX, id)) === 1;
  }

  async get(id: string): Promise<StoredKey | null> {
    return (await this.read([id]))[0] ?? null;
  }

  async list(): Promise<StoredKey[]> {
    return (await this.read([])).sort((a, b) => a.record.id.localeCompare(b.record.id));
  }

  private async read(ids: string[]): Promise<StoredKey[]> {
    const [now, rows] = (await this.run('syKeyRead', KEY_IDS, KEY_RECORD_PREFIX, ...ids)) as [number, string[][]];
    return rows.map(([id, sha256, ...values]) => {
      const f = Object.fromEntries(READ_FIELDS.map((name, i) => [name, values[i]])) as Record<(typeof READ_FIELDS)[number], string>;
      const record: ApiKeyRecord = {
        id,
        name: f.name,
        prefix: f.prefix,
        sha256,
        models: unpackModels(f.models),
        rpm: limitOf(f.rpm),
        tpm: limitOf(f.tpm),
        source: f.source === 'config' ? 'config' : 'api',
        created_at: Number(f.created_at),
      };
      const usage = usageOf(record, { rt: Number(f.rt) || 0, tt: Number(f.tt) || 0, wm: Number(f.wm) || 0, wr: Number(f.wr) || 0, wt: Number(f.wt) || 0 }, Number(now));
      return { record, usage };
    });
  }
}
