import type { ApiKeyRecord } from '@switchyard/contracts';
import { EPSILON, WINDOW_MS } from './key-names';
import { KeyAdmission, KeyPut, KeyStore, LimitFields, remaining, StoredKey, usageOf } from './key-store';

interface Entry extends LimitFields {
  record: ApiKeyRecord;
}

/**
 * Keys held in this process: the store of single-process mode (`npm start` without Redis), and
 * the proxy's own limits for keys it served recently while Redis is unreachable. The same
 * arithmetic as the admit-key script.
 */
export class MemoryKeyStore implements KeyStore {
  private readonly bySha = new Map<string, Entry>();
  private readonly ids = new Map<string, string>();

  constructor(private readonly now: () => number = Date.now) {}

  async admit(sha256: string, model: string, cost: number): Promise<KeyAdmission> {
    return this.admitNow(sha256, model, cost);
  }

  admitNow(sha256: string, model: string, cost: number): KeyAdmission {
    const e = this.bySha.get(sha256);
    if (!e) return { kind: 'unknown' };
    const { id, models, rpm, tpm } = e.record;
    if (models && !models.includes(model)) return { kind: 'model_not_allowed', id };
    const now = this.now();
    let rt = Math.max(e.rt, now);
    let tt = Math.max(e.tt, now);
    let limitedBy: 'requests' | 'tokens' | null = null;
    let retry = 0;
    const nrt = rpm ? rt + WINDOW_MS / rpm : rt;
    const ntt = tpm ? tt + (cost * WINDOW_MS) / tpm : tt;
    if (rpm && nrt - now > WINDOW_MS + EPSILON) [limitedBy, retry] = ['requests', nrt - now - WINDOW_MS];
    else if (tpm && tt > now && ntt - now > WINDOW_MS + EPSILON) [limitedBy, retry] = ['tokens', Math.min(ntt - now - WINDOW_MS, tt - now)];
    if (!limitedBy) {
      const minute = Math.floor(now / WINDOW_MS);
      if (e.wm !== minute) Object.assign(e, { wm: minute, wr: 0, wt: 0 });
      [rt, tt] = [nrt, ntt];
      Object.assign(e, { rt, tt, wr: e.wr + 1, wt: e.wt + cost });
    }
    return {
      kind: limitedBy ? 'limited' : 'admitted',
      grant: { id, models, rpm, tpm },
      limitedBy,
      requests: rpm ? { limit: rpm, remaining: remaining(rpm, rt, now) ?? 0, resetMs: Math.ceil(rt - now) } : null,
      tokens: tpm ? { limit: tpm, remaining: remaining(tpm, tt, now) ?? 0, resetMs: Math.ceil(tt - now) } : null,
      retryAfterMs: Math.ceil(retry),
    };
  }

  async settle(deltas: ReadonlyMap<string, number>): Promise<void> {
    const now = this.now();
    for (const [sha, d] of deltas) {
      const e = this.bySha.get(sha);
      if (!e) continue;
      if (e.record.tpm) e.tt = Math.max(Math.max(e.tt, now) + (d * WINDOW_MS) / e.record.tpm, now);
      if (e.wm === Math.floor(now / WINDOW_MS)) e.wt = Math.max(0, e.wt + d);
    }
  }

  async put(key: KeyPut): Promise<'created' | 'updated' | 'conflict'> {
    return this.putNow(key);
  }

  putNow(key: KeyPut): 'created' | 'updated' | 'conflict' {
    const holder = this.bySha.get(key.sha256);
    if (holder && holder.record.id !== key.id) return 'conflict';
    const old = this.ids.get(key.id);
    if (old !== undefined && old !== key.sha256) this.bySha.delete(old);
    const created_at = key.created_at ?? holder?.record.created_at ?? this.now();
    const record: ApiKeyRecord = { ...key, created_at };
    if (holder) holder.record = record;
    else this.bySha.set(key.sha256, { record, rt: 0, tt: 0, wm: 0, wr: 0, wt: 0 });
    this.ids.set(key.id, key.sha256);
    return old === undefined ? 'created' : 'updated';
  }

  async revoke(id: string): Promise<boolean> {
    const sha = this.ids.get(id);
    if (sha === undefined) return false;
    this.ids.delete(id);
    this.bySha.delete(sha);
    return true;
  }

  async get(id: string): Promise<StoredKey | null> {
    const sha = this.ids.get(id);
    const e = sha === undefined ? undefined : this.bySha.get(sha);
    return e ? { record: { ...e.record }, usage: usageOf(e.record, e, this.now()) } : null;
  }

  async list(): Promise<StoredKey[]> {
    const now = this.now();
    return [...this.bySha.values()].map((e) => ({ record: { ...e.record }, usage: usageOf(e.record, e, now) })).sort((a, b) => a.record.id.localeCompare(b.record.id));
  }
}
