import Redis from 'ioredis';
import { RedisServer } from '@switchyard/testing';
import { hashSecret, KeyPut, KeyStore } from './key-store';
import { MemoryKeyStore } from './memory-key-store';
import { RedisKeyStore } from './redis-key-store';

const server = new RedisServer();
let client: Redis;

beforeAll(async () => {
  await server.start();
  client = new Redis(server.url);
});
afterAll(async () => {
  client.disconnect();
  await server.stop();
});

let n = 0;
/** A key of its own per case, so cases share the server without a flush. */
function key(limits: Partial<Pick<KeyPut, 'models' | 'rpm' | 'tpm'>> = {}): { secret: string; sha: string; put: KeyPut } {
  const secret = `sk-sy-test-secret-${++n}-${Math.random()}`;
  const sha = hashSecret(secret);
  return { secret, sha, put: { id: `key_${n}`, name: `k${n}`, prefix: secret.slice(0, 10), sha256: sha, models: null, rpm: null, tpm: null, source: 'api', ...limits } };
}

describe.each<[string, () => KeyStore]>([
  ['memory', () => new MemoryKeyStore()],
  ['redis', () => new RedisKeyStore(client)],
])('%s key store', (_name, make) => {
  let store: KeyStore;
  beforeEach(() => (store = make()));

  it('admits a known key, refuses an unknown one, and forgets a revoked one at once', async () => {
    const k = key();
    expect(await store.admit(k.sha, 'm', 1)).toEqual({ kind: 'unknown' });
    expect(await store.put(k.put)).toBe('created');
    expect(await store.admit(k.sha, 'm', 1)).toMatchObject({ kind: 'admitted', grant: { id: k.put.id, models: null, rpm: null, tpm: null }, requests: null, tokens: null });
    expect(await store.revoke(k.put.id)).toBe(true);
    expect(await store.revoke(k.put.id)).toBe(false);
    expect(await store.admit(k.sha, 'm', 1)).toEqual({ kind: 'unknown' });
    expect(await store.get(k.put.id)).toBeNull();
  });

  it('refuses a model outside the allow-list, even one whose name contains an allowed one', async () => {
    const k = key({ models: ['llama-8b', 'qwen'] });
    await store.put(k.put);
    expect((await store.admit(k.sha, 'qwen', 1)).kind).toBe('admitted');
    expect(await store.admit(k.sha, 'llama', 1)).toEqual({ kind: 'model_not_allowed', id: k.put.id });
    expect((await store.admit(k.sha, 'llama-8b', 1)).kind).toBe('admitted');
  });

  it('admits rpm requests in a burst, then refuses with the time until one fits', async () => {
    const k = key({ rpm: 7 });
    await store.put(k.put);
    const remaining: number[] = [];
    for (let i = 0; i < 7; i++) {
      const a = await store.admit(k.sha, 'm', 1);
      expect(a.kind).toBe('admitted');
      if (a.kind === 'admitted') remaining.push(a.requests!.remaining);
    }
    expect(remaining).toEqual([6, 5, 4, 3, 2, 1, 0]);
    const refused = await store.admit(k.sha, 'm', 1);
    expect(refused).toMatchObject({ kind: 'limited', limitedBy: 'requests', requests: { limit: 7, remaining: 0 } });
    if (refused.kind !== 'limited') throw new Error('not limited');
    // One request frees up every 60/7 s; the refusal says how long until then.
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(Math.ceil(60_000 / 7));
    expect((await store.get(k.put.id))?.usage).toMatchObject({ requests: 7, remaining_requests: 0 });
  });

  it('refuses once the tokens used fill the tpm bucket, and a settle correction moves it both ways', async () => {
    // tpm 10: one token comes back every 6 s, so the counts below hold however slow the machine.
    const k = key({ tpm: 10 });
    await store.put(k.put);
    expect((await store.admit(k.sha, 'm', 6)).kind).toBe('admitted');
    expect(await store.admit(k.sha, 'm', 6)).toMatchObject({ kind: 'limited', limitedBy: 'tokens', tokens: { limit: 10, remaining: 4 } });
    // The answer used 1 token, not 6: the bucket gets 5 back, and the next request fits.
    await store.settle(new Map([[k.sha, -5]]));
    expect(await store.admit(k.sha, 'm', 6)).toMatchObject({ kind: 'admitted', tokens: { remaining: 3 } });
    expect((await store.get(k.put.id))?.usage).toMatchObject({ requests: 2, tokens: 7, remaining_tokens: 3 });
    await store.settle(new Map([[k.sha, 4]]));
    expect(await store.admit(k.sha, 'm', 1)).toMatchObject({ kind: 'limited', limitedBy: 'tokens' });
  });

  it('takes one large request on an idle key, then makes the next wait', async () => {
    const k = key({ tpm: 10 });
    await store.put(k.put);
    expect((await store.admit(k.sha, 'm', 500)).kind).toBe('admitted');
    expect((await store.admit(k.sha, 'm', 1)).kind).toBe('limited');
  });

  it('never writes a revoked key back through a late settle', async () => {
    const k = key({ tpm: 100 });
    await store.put(k.put);
    await store.admit(k.sha, 'm', 5);
    await store.revoke(k.put.id);
    await store.settle(new Map([[k.sha, 3]]));
    expect(await store.admit(k.sha, 'm', 1)).toEqual({ kind: 'unknown' });
    expect(await store.list()).not.toContainEqual(expect.objectContaining({ record: expect.objectContaining({ id: k.put.id }) }));
  });

  it('an update keeps created_at and the limit state; a changed secret retires the old one; one secret belongs to one id', async () => {
    const k = key({ rpm: 2 });
    await store.put(k.put);
    const before = (await store.get(k.put.id))!.record.created_at;
    await store.admit(k.sha, 'm', 1);
    await store.admit(k.sha, 'm', 1);
    expect(await store.put({ ...k.put, name: 'renamed' })).toBe('updated');
    expect(await store.get(k.put.id)).toMatchObject({ record: { name: 'renamed', created_at: before }, usage: { requests: 2 } });
    expect((await store.admit(k.sha, 'm', 1)).kind).toBe('limited');
    const other = key();
    expect(await store.put({ ...other.put, sha256: k.sha })).toBe('conflict');
    const fresh = key();
    expect(await store.put({ ...k.put, sha256: fresh.sha })).toBe('updated');
    expect(await store.admit(k.sha, 'm', 1)).toEqual({ kind: 'unknown' });
    expect((await store.admit(fresh.sha, 'm', 1)).kind).toBe('admitted');
  });
});

describe('redis key store', () => {
  it('keeps every key under the {keys} hash tag and no secret in plain text', async () => {
    const store = new RedisKeyStore(client);
    const k = key({ rpm: 5, models: ['m'] });
    await store.put(k.put);
    await store.admit(k.sha, 'm', 3);
    const names = await client.keys('*');
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) {
      expect(name.startsWith('sy:{keys}:')).toBe(true);
      const type = await client.type(name);
      const dump = JSON.stringify(type === 'hash' ? await client.hgetall(name) : await client.get(name));
      expect(dump).not.toContain(k.secret);
    }
  });
});
