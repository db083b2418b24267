import Redis from 'ioredis';
import { RedisLoadStore } from '@switchyard/load-store';
import { RedisServer, waitFor } from '@switchyard/testing';
import { RegistryCache } from './registry-cache';
import { Slots, SlotsOptions } from './slots';

const server = new RedisServer();
let store: RedisLoadStore;
let pool = 0;

beforeAll(async () => {
  await server.start();
});
afterAll(async () => {
  await server.stop();
});
beforeEach(async () => {
  store = new RedisLoadStore({ url: server.url, pool: `slots${++pool}`, offlineQueue: false, autoPipelining: true });
  // Without an offline queue, commands fail until the connection is up.
  await waitFor(() => store.ping().then(() => true, () => false));
  for (const id of ['a', 'b']) await store.register({ instance_id: id, url: `http://127.0.0.1:1/${id}`, models: ['m'], endpoints: [], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 30 });
});
afterEach(async () => {
  await store.close();
});

async function ledger(options: Partial<SlotsOptions> = {}, through: RedisLoadStore = store): Promise<Slots> {
  const registry = new RegistryCache(through);
  await registry.pull();
  const slots = new Slots({ store: through, registry, proxyId: 'p1', strategy: 'least_load', cooldownMs: 0, affinityTtlMs: 60_000, random: () => 0, ...options });
  freed.set(slots, 0);
  slots.onCapacity(() => freed.set(slots, (freed.get(slots) ?? 0) + 1));
  return slots;
}
/** Capacity signals per ledger: one per release the store has answered (or, while degraded, at once). */
const freed = new WeakMap<Slots, number>();
/** Waits until the ledger has signalled `n` freed slots in all: the store has those releases. */
const releases = (slots: Slots, n: number) => waitFor(() => freed.get(slots) === n, 2000, 5);
const inflight = async (id: string) => (await store.getInstance(id))?.load.inflight;

async function acquired(slots: Slots, tried: string[] = []) {
  const r = await slots.acquire('m', tried);
  if (r.kind !== 'acquired') throw new Error(`expected a slot, got ${r.kind}`);
  return r.slot;
}

describe('Slots ledger', () => {
  it('counts a slot locally and in the store, and releases it exactly once however often release is called', async () => {
    const slots = await ledger();
    // Both on instance a, so a second release of one would take the other's count.
    const s = await acquired(slots, ['b']);
    const other = await acquired(slots, ['b']);
    expect(slots.view.get('a')).toBe(2);
    s.release();
    s.release();
    expect(await releases(slots, 1)).toBe(true);
    expect(slots.view.get('a')).toBe(1);
    expect(await inflight('a')).toBe(1);
    other.release();
    expect(await releases(slots, 2)).toBe(true);
    expect(slots.total).toBe(0);
    expect(await inflight('a')).toBe(0);
  });

  it('sends the acquires and releases of one turn as one batch, in order; a reconcile waits for the acquires to be answered', async () => {
    const slots = await ledger();
    const held = await Promise.all([acquired(slots), acquired(slots)]);
    const calls: string[] = [];
    const spy = (name: 'batch' | 'acquire' | 'release' | 'reconcile') => {
      const real = (store[name] as (...a: unknown[]) => Promise<unknown>).bind(store);
      (store as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
        calls.push(name === 'batch' ? `batch ${(args[1] as { kind: string }[]).map((o) => o.kind).join(',')}` : name);
        return real(...args);
      };
    };
    for (const name of ['batch', 'acquire', 'release', 'reconcile'] as const) spy(name);
    // One turn: two releases, two acquires, a reconcile asked for, one more acquire.
    for (const s of held) s.release();
    const got = [slots.acquire('m'), slots.acquire('m')];
    const rec = slots.reconcile();
    got.push(slots.acquire('m'));
    const answers = await Promise.all(got);
    await rec;
    expect(answers.map((a) => a.kind)).toEqual(['acquired', 'acquired', 'acquired']);
    expect(calls).toEqual(['batch release,release,acquire,acquire,acquire', 'reconcile']);
    expect(await releases(slots, 2)).toBe(true);
    const sum = ((await inflight('a')) ?? 0) + ((await inflight('b')) ?? 0);
    expect(sum).toBe(3);
  });

  it('signals freed capacity once the store has the release', async () => {
    const slots = await ledger();
    const s = await acquired(slots);
    s.release();
    expect(freed.get(slots)).toBe(0);
    expect(await releases(slots, 1)).toBe(true);
    expect(await inflight(s.instanceId)).toBe(0);
  });

  it('a reconcile never erases a slot the store has counted but whose answer has not arrived yet', async () => {
    const slots = await ledger();
    // The acquire goes out first on the same connection; the rewrite must wait for its answer.
    const pending = slots.acquire('m');
    await slots.reconcile();
    const r = await pending;
    expect(r.kind).toBe('acquired');
    expect((await inflight('a'))! + (await inflight('b'))!).toBe(1);
  });

  it('a reconcile and releases sent in the same turn count each slot once', async () => {
    const slots = await ledger();
    const [s1, s2] = [await acquired(slots, ['b']), await acquired(slots, ['b']), await acquired(slots, ['b'])];
    s1.release();
    const reconciled = slots.reconcile();
    // Released after the rewrite was queued: the store must see the rewrite (2) and then this release.
    s2.release();
    await reconciled;
    expect(await releases(slots, 2)).toBe(true);
    expect(slots.view.get('a')).toBe(1);
    expect(await inflight('a')).toBe(1);
  });

  it('a reconcile heals a release the store never saw', async () => {
    const slots = await ledger();
    await acquired(slots);
    await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' });
    expect((await inflight('a'))! + (await inflight('b'))!).toBe(2);
    await slots.reconcile();
    expect((await inflight('a'))! + (await inflight('b'))!).toBe(1);
  });

  it('avoids an instance cooling down while another is left, and tries it again when it is the only one', async () => {
    let now = 1000;
    const slots = await ledger({ cooldownMs: 5000, now: () => now });
    slots.coolDown('a');
    const first = await acquired(slots);
    const second = await acquired(slots);
    expect([first.instanceId, second.instanceId]).toEqual(['b', 'b']);
    expect((await acquired(slots, ['b'])).instanceId).toBe('a');
    now += 5000;
    // Cooled down: least load picks a again (a 1, b 2).
    expect((await acquired(slots)).instanceId).toBe('a');
  });

  it('while the store is paused: picks locally over its own counts, releases without the store, and reconciles when it answers again', async () => {
    // The proxy's own short command timeout, so a pause reads as an outage; the checks go through the patient store.
    const hasty = new RedisLoadStore({ url: server.url, pool: `slots${pool}`, commandTimeoutMs: 300, offlineQueue: false, autoPipelining: true });
    await waitFor(() => hasty.ping().then(() => true, () => false));
    const slots = await ledger({}, hasty);
    const held = await acquired(slots);
    const admin = new Redis(server.url);
    try {
      await admin.call('CLIENT', 'PAUSE', '1500', 'ALL');
      const local = await acquired(slots);
      expect(slots.degraded).toBe(true);
      // Least load over its own counts: the other instance.
      expect(local.instanceId).not.toBe(held.instanceId);
      held.release();
      expect(slots.view.get(held.instanceId)).toBeUndefined();
      await new Promise((r) => setTimeout(r, 1600));
      // The store still counts the slot released during the outage (and the timed-out acquire, which Redis ran after the pause).
      expect(await inflight(held.instanceId)).toBeGreaterThanOrEqual(1);
      expect(slots.storeAnswered()).toBe(true);
      await slots.reconcile();
      expect(await inflight(held.instanceId)).toBe(0);
      expect(await inflight(local.instanceId)).toBe(1);
      expect(slots.storeAnswered()).toBe(false);
      local.release();
      expect(await waitFor(async () => (await inflight(local.instanceId)) === 0, 2000, 5)).toBe(true);
    } finally {
      admin.disconnect();
      await hasty.close();
    }
  });

  it('refuses with the store’s reason: unknown model', async () => {
    const slots = await ledger();
    expect((await slots.acquire('nope')).kind).toBe('unknown_model');
  });
});
