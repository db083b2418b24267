import { MemoryLoadStore } from '@switchyard/load-store';
import { RegistryCache } from './registry-cache';

const rec = (id: string, models: string[], ttl_s = 30) => ({ instance_id: id, url: `http://${id}`, models, endpoints: [], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s });

describe('RegistryCache', () => {
  it('pulls alive and expired instances, and lists only models with an alive instance', async () => {
    let now = 1_000_000;
    const store = new MemoryLoadStore({ now: () => now });
    await store.register(rec('a', ['m1', 'shared'], 10));
    await store.register(rec('b', ['m2', 'shared'], 1));
    now += 5_000; // b expired, a alive
    const cache = new RegistryCache(store);
    expect(cache.loaded).toBe(false);
    await cache.pull();
    expect(cache.loaded).toBe(true);
    expect(cache.models()).toEqual(['m1', 'shared']);
    expect(cache.hasModel('m2')).toBe(true);
  });

  it('applies newer snapshot events, ignores stale ones, and keeps known liveness', async () => {
    const store = new MemoryLoadStore();
    await store.register(rec('a', ['m1']));
    const cache = new RegistryCache(store);
    await cache.pull();
    const snap = await store.snapshot();
    expect(cache.applySnapshot({ ...snap, version: 5, instances: [...snap.instances, { ...rec('c', ['m3']), registered_at: 0 }] })).toBe(true);
    expect(cache.models()).toEqual(['m1', 'm3']);
    expect(cache.applySnapshot({ ...snap, version: 4, instances: [] })).toBe(false);
    expect(cache.size).toBe(2);
    expect(cache.applySnapshot({ ...snap, version: 6, instances: [] })).toBe(true);
    expect(cache.models()).toEqual([]);
  });

  it("keeps a pulled instance key across snapshot events (which never carry keys), and flags a key it has not pulled yet", async () => {
    const store = new MemoryLoadStore();
    await store.register({ ...rec('a', ['m']), api_key: 'sk-a' });
    const cache = new RegistryCache(store);
    await cache.pull();
    expect(cache.get('a')?.authorization).toBe('Bearer sk-a');
    const { api_key: _k, ...publicA } = (await store.snapshot()).instances[0];
    expect(cache.applySnapshot({ version: 10, generated_at: 0, instances: [{ ...publicA, has_api_key: true }, { ...rec('b', ['m']), registered_at: 0, has_api_key: true }] })).toBe(true);
    expect(cache.get('a')?.authorization).toBe('Bearer sk-a');
    expect(cache.get('b')?.authorization).toBeUndefined();
    expect(cache.keysMissing).toBe(true);
    await store.register({ ...rec('b', ['m']), api_key: 'sk-b' });
    await cache.pull();
    expect([cache.get('b')?.authorization, cache.keysMissing]).toEqual(['Bearer sk-b', false]);
  });

  it('offers candidates with this proxy’s own counts standing in for the shared ones', async () => {
    const store = new MemoryLoadStore();
    await store.register(rec('a', ['m']));
    await store.register(rec('b', ['m']));
    const cache = new RegistryCache(store);
    await cache.pull();
    const c = cache.candidates('m', new Map([['a', 3]]), ['x']);
    expect(c.map((x) => [x.instance_id, x.inflight])).toEqual([['a', 3], ['b', 0]]);
    expect(cache.candidates('m', new Map(), ['a']).map((x) => x.instance_id)).toEqual(['b']);
    // Unknown load is unknown, not zero.
    expect(c[0].qps_1m).toBeNull();
  });

  it('pulls only what changed: liveness and engine signals patch the cached instances without reading the pool', async () => {
    const store = new MemoryLoadStore();
    await store.register(rec('a', ['m']));
    await store.register(rec('b', ['m']));
    const cache = new RegistryCache(store);
    await cache.pull();
    const sync = jest.spyOn(store, 'syncRegistry');
    const dump = jest.spyOn(store, 'listInstances');
    await store.markDown('a');
    await store.reportEngine('b', { engine: 'vllm', running: 2, waiting: 4, kv_cache_usage: 0.99, scraped_at: 1, scrape_error: null }, true);
    await cache.pull();
    expect(await sync.mock.results[0].value).toMatchObject({ kind: 'changes' });
    expect(cache.candidates('m', new Map(), []).map((c) => [c.instance_id, c.is_alive, c.waiting, c.saturated])).toEqual([
      ['a', false, null, false],
      ['b', true, 4, true],
    ]);
    expect(cache.models()).toEqual(['m']);
    await cache.pull();
    expect(await sync.mock.results[1].value).toMatchObject({ kind: 'unchanged' });
    await store.heartbeat('a', {});
    await cache.pull();
    expect(cache.get('a')?.is_alive).toBe(true);
    // A registry change brings the whole registry again.
    await store.register(rec('c', ['n']));
    await cache.pull();
    expect(await sync.mock.results[3].value).toMatchObject({ kind: 'full' });
    expect(cache.models()).toEqual(['m', 'n']);
    expect(dump).not.toHaveBeenCalled();
  });

  it('learns that a ttl lapsed at its next pull, with no sweep, and drops the model from /v1/models', async () => {
    let now = 1_000_000;
    const store = new MemoryLoadStore({ now: () => now });
    await store.register(rec('a', ['m'], 10));
    await store.register(rec('b', ['m', 'only-b'], 2));
    const cache = new RegistryCache(store);
    await cache.pull();
    expect(cache.models()).toEqual(['m', 'only-b']);
    now += 1000;
    await store.heartbeat('a', {});
    now += 1500;
    await cache.pull();
    expect(cache.get('b')?.is_alive).toBe(false);
    expect(cache.models()).toEqual(['m']);
    expect(cache.candidates('m', new Map(), []).filter((c) => c.is_alive).map((c) => c.instance_id)).toEqual(['a']);
  });
});
