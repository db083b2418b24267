import { EngineSignals, InstanceRecord, InstanceStats, recordOf, TTFT_BUCKETS_MS, UNKNOWN_ENGINE } from '@switchyard/contracts';
import type { LoadStore } from './load-store';

type NewRecord = Omit<InstanceRecord, 'registered_at'>;

export function record(id: string, extra: Partial<NewRecord> = {}): NewRecord {
  return {
    instance_id: id,
    url: `http://127.0.0.1:${9000 + id.length}`,
    models: ['m'],
    endpoints: ['/v1/chat/completions'],
    tags: [],
    weight: 1,
    max_inflight: null,
    meta: {},
    ttl_s: 30,
    ...extra,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The shared contract: every LoadStore must pass these same cases. */
/** Mixed-case ids in byte order: the order round_robin must walk on every store and server locale. */
export const BYTE_ORDER = ['A', 'B', '_z', 'a', 'a-c', 'ab', 'b'];

/** Registers the BYTE_ORDER ids shuffled and returns the order one full round_robin cycle visits them in. */
export async function roundRobinWalk(store: LoadStore): Promise<string[]> {
  for (const id of ['b', 'a-c', 'B', '_z', 'ab', 'A', 'a']) await store.register(record(id));
  const order: string[] = [];
  for (let i = 0; i < BYTE_ORDER.length; i++) {
    const r = await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'round_robin' });
    order.push(r.kind === 'acquired' ? r.instance_id : r.kind);
  }
  return order;
}

/** What a store under contract may be given: the random source that random and power_of_two draw from. */
export interface ContractStoreOptions {
  random?: () => number;
  reapGraceMs?: number;
}

const vllm = (waiting: number | null, kv: number | null = 0.5): EngineSignals => ({ engine: 'vllm', running: 1, waiting, kv_cache_usage: kv, scraped_at: 1, scrape_error: null });
const info = (proxy_id: string) => ({ proxy_id, inflight_http: 0, queued: {}, draining: false, degraded: false });

export function describeLoadStoreContract(name: string, makeStore: (options?: ContractStoreOptions) => Promise<LoadStore>, cleanup: (s: LoadStore) => Promise<void>) {
  describe(`LoadStore contract: ${name}`, () => {
    let store: LoadStore;
    let extra: LoadStore[] = [];
    beforeEach(async () => {
      store = await makeStore();
    });
    afterEach(async () => {
      for (const s of extra) await cleanup(s);
      extra = [];
    });
    /** Replaces this case's store with an empty one whose random source repeats the draws, for exact random and power_of_two picks. */
    const useRandom = async (draws: number[]) => {
      let i = 0;
      extra.push(store);
      store = await makeStore({ random: () => draws[i++ % draws.length] });
    };
    const acquireId = async (s: LoadStore, strategy: Parameters<LoadStore['acquire']>[0]['strategy'], exclude?: string[]) => {
      const r = await s.acquire({ proxyId: 'p1', model: 'm', strategy, ...(exclude ? { exclude } : {}) });
      return r.kind === 'acquired' ? r.instance_id : r.kind;
    };
    afterEach(async () => {
      await cleanup(store);
    });

    const inflightOf = async (id: string) => (await store.getInstance(id))?.load.inflight;

    it('starts a new instance at inflight 0 with unknown qps and gpu', async () => {
      const { created, state } = await store.register(record('a'));
      expect(created).toBe(true);
      expect(state.load).toEqual({ inflight: 0, qps_1m: null, gpu_util: null });
      expect(state.engine).toEqual(UNKNOWN_ENGINE);
      expect(state.saturated).toBe(false);
      expect(state.is_alive).toBe(true);
      expect(state.registered_at).toBeGreaterThan(0);
    });

    it('keeps the live count and registered_at when a live instance re-registers, and applies new fields', async () => {
      const first = await store.register(record('a'));
      await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' });
      await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' });
      const again = await store.register(record('a', { models: ['m', 'n'], weight: 3 }));
      expect(again.created).toBe(false);
      expect(again.state.load.inflight).toBe(2);
      expect(again.state.weight).toBe(3);
      expect(again.state.registered_at).toBe(first.state.registered_at);
      expect((await store.acquire({ proxyId: 'p1', model: 'n', strategy: 'least_load' })).kind).toBe('acquired');
    });

    it('drops an instance from a model it no longer serves on re-registration', async () => {
      await store.register(record('a', { models: ['m', 'n'] }));
      await store.register(record('a', { models: ['n'] }));
      expect((await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' })).kind).toBe('unknown_model');
    });

    it('records heartbeat metrics without touching inflight', async () => {
      await store.register(record('a'));
      await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' });
      expect(await store.heartbeat('a', { qps_1m: 4.5, gpu_util: 70 })).toBe('alive');
      expect((await store.getInstance('a'))?.load).toEqual({ inflight: 1, qps_1m: 4.5, gpu_util: 70 });
      expect(await store.heartbeat('a', { qps_1m: 0 })).toBe('alive');
      expect((await store.getInstance('a'))?.load).toEqual({ inflight: 1, qps_1m: 0, gpu_util: 70 });
    });

    it('answers false to a heartbeat for an unknown instance', async () => {
      expect(await store.heartbeat('ghost', {})).toBe('unknown');
      expect(await store.reportEngine('ghost', vllm(1), false)).toBe(false);
      expect(await store.markDown('ghost')).toBe('unknown');
      expect(await store.listInstances()).toEqual([]);
    });

    it('turns an instance dead after its TTL and stops selecting it; a heartbeat revives it', async () => {
      await store.register(record('short', { ttl_s: 0.3 }));
      await store.register(record('long'));
      await sleep(450);
      expect((await store.getInstance('short'))?.is_alive).toBe(false);
      for (let i = 0; i < 4; i++) {
        const r = await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'round_robin' });
        expect(r).toMatchObject({ kind: 'acquired', instance_id: 'long' });
      }
      expect(await store.heartbeat('short', {})).toBe('revived');
      expect((await store.getInstance('short'))?.is_alive).toBe(true);
    });

    it('reports each lapsed ttl once per lapse, and watches again after a heartbeat', async () => {
      await store.register(record('short', { ttl_s: 0.2 }));
      await store.register(record('downed', { ttl_s: 0.2 }));
      await store.register(record('long'));
      expect(await store.sweepLiveness()).toEqual([]);
      await store.markDown('downed');
      await sleep(300);
      // 'downed' was taken out by markDown and reported then; only the ttl lapse is news.
      expect(await store.sweepLiveness()).toEqual(['short']);
      expect(await store.sweepLiveness()).toEqual([]);
      await store.heartbeat('short', {});
      expect(await store.sweepLiveness()).toEqual([]);
      await sleep(300);
      expect(await store.sweepLiveness()).toEqual(['short']);
    });

    it('takes a marked-down instance out of selection and every read at once; the next heartbeat revives it', async () => {
      await store.register(record('a'));
      await store.register(record('b'));
      expect(await store.markDown('a')).toBe('was_alive');
      expect(await store.markDown('a')).toBe('already_down');
      for (let i = 0; i < 3; i++) expect(await acquireId(store, 'round_robin')).toBe('b');
      expect((await store.getInstance('a'))?.is_alive).toBe(false);
      expect((await store.listInstances()).map((s) => [s.instance_id, s.is_alive])).toEqual([
        ['a', false],
        ['b', true],
      ]);
      await store.markDown('b');
      expect(await acquireId(store, 'least_load')).toBe('none_alive');
      expect(await store.heartbeat('a', {})).toBe('revived');
      expect(await acquireId(store, 'least_load')).toBe('a');
      expect(await store.heartbeat('a', {})).toBe('alive');
      // Marking down never touches in-flight.
      expect((await store.getInstance('b'))?.inflight_by_proxy).toEqual({ p1: 3 });
    });

    it('stores engine signals and the saturation flag without touching inflight or liveness', async () => {
      await store.register(record('a'));
      await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' });
      const signals: EngineSignals = { engine: 'sglang', running: 3, waiting: 0, kv_cache_usage: 0.98, scraped_at: 1234, scrape_error: null };
      expect(await store.reportEngine('a', signals, true)).toBe(true);
      const a = await store.getInstance('a');
      expect(a?.engine).toEqual(signals);
      expect(a?.saturated).toBe(true);
      expect(a?.load.inflight).toBe(1);
      expect((await store.listInstances())[0]).toEqual(a);
      const failed: EngineSignals = { ...UNKNOWN_ENGINE, scrape_error: 'metrics body over 4 MiB' };
      expect(await store.reportEngine('a', failed, false)).toBe(true);
      expect((await store.getInstance('a'))?.engine).toEqual(failed);
      expect((await store.getInstance('a'))?.saturated).toBe(false);
    });

    it('least_load: with equal in-flight the engine with fewer waiting is chosen, before qps_1m; unknown waiting orders as 0', async () => {
      for (const id of ['a', 'b', 'c']) await store.register(record(id));
      await store.reportEngine('a', vllm(4), false);
      await store.reportEngine('b', vllm(1), false);
      await store.reportEngine('c', vllm(2), false);
      await store.heartbeat('b', { qps_1m: 50 });
      expect(await acquireId(store, 'least_load')).toBe('b');
      // b now has 1 in flight: a and c tie on 0, c waits less.
      expect(await acquireId(store, 'least_load')).toBe('c');
      await store.reportEngine('a', vllm(null), false);
      expect(await acquireId(store, 'least_load')).toBe('a');
    });

    it('saturation guard: a saturated instance is skipped while another has room, for every strategy; all saturated are still served', async () => {
      await useRandom([0, 0.99]);
      await store.register(record('a'));
      await store.register(record('b', { max_inflight: 50 }));
      await store.reportEngine('a', vllm(0, 0.99), true);
      for (let i = 0; i < 3; i++) await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load', exclude: ['a'] });
      for (const strategy of ['least_load', 'round_robin', 'random', 'power_of_two'] as const) {
        for (let i = 0; i < 2; i++) expect(await acquireId(store, strategy)).toBe('b');
      }
      await store.reportEngine('b', vllm(0, 0.98), true);
      // Both saturated: least_load serves the less loaded one again.
      expect(await acquireId(store, 'least_load')).toBe('a');
      await store.reportEngine('a', vllm(0, 0.5), false);
      await store.reportEngine('b', vllm(0, 0.5), false);
      expect(await acquireId(store, 'least_load')).toBe('a');
    });

    it('random and power_of_two map the injected random draws onto alive, open instances in id order', async () => {
      // Each acquire draws twice: [rand1, rand2].
      await useRandom([0.6, 0.4, 0.1, 0.4, 0.6, 0.4, 0.6, 0.4]);
      for (const id of ['c', 'a', 'd', 'b']) await store.register(record(id));
      for (let i = 0; i < 3; i++) await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load', exclude: ['a', 'b', 'd'] });
      await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load', exclude: ['a', 'c', 'd'] });
      // Four least_load acquires drew (0.6, 0.4) (0.1, 0.4) (0.6, 0.4) (0.6, 0.4); loads now: a 0, b 1, c 3, d 0.
      expect(await acquireId(store, 'random')).toBe('c'); // floor(0.6 * 4) = 2 of [a, b, c, d]
      expect(await acquireId(store, 'random', ['c'])).toBe('a'); // floor(0.1 * 3) = 0 of [a, b, d]
      // c is 4 now. floor(0.6 * 4) = 2 -> c (4) against floor(0.4 * 3) = 1 of the rest [a, b, d] -> b (1): b is less loaded.
      expect(await acquireId(store, 'power_of_two')).toBe('b');
      // b is 2 now. With c excluded: floor(0.6 * 3) = 1 of [a, b, d] -> b (2) against floor(0.4 * 2) = 0 of [a, d] -> a (0).
      expect(await acquireId(store, 'power_of_two', ['c'])).toBe('a');
    });

    it('claims the control plane for one replica at a time: renews its own, takes over a lapsed one', async () => {
      expect(await store.claimControlPlane('cp-1', 300, 300)).toBe(true);
      expect(await store.claimControlPlane('cp-2', 300, 300)).toBe(false);
      expect(await store.claimControlPlane('cp-1', 300, 300)).toBe(true);
      await sleep(400);
      expect(await store.claimControlPlane('cp-2', 300, 300)).toBe(true);
      expect(await store.claimControlPlane('cp-1', 300, 300)).toBe(false);
    });

    it('tells a renewing proxy whether the control plane holds its lease; true when none ever claimed one', async () => {
      expect(await store.renewLease(info('p1'), 10_000)).toEqual({ controlPlaneAlive: true });
      await store.claimControlPlane('cp-1', 200, 200);
      expect(await store.renewLease(info('p1'), 10_000)).toEqual({ controlPlaneAlive: true });
      await sleep(300);
      expect(await store.renewLease(info('p1'), 10_000)).toEqual({ controlPlaneAlive: false });
      await store.claimControlPlane('cp-2', 10_000, 10_000);
      expect(await store.renewLease(info('p1'), 10_000)).toEqual({ controlPlaneAlive: true });
    });

    it('keeps the last liveness while the control plane lease has lapsed, and moves expiries on by the gap when one returns', async () => {
      await store.register(record('a', { ttl_s: 0.4 }));
      await store.register(record('gone', { ttl_s: 0.4 }));
      await store.markDown('gone');
      await store.claimControlPlane('cp-1', 100, 100);
      await sleep(600);
      // a's ttl ran out at the clock, but after the control plane stopped: it stays alive for proxies and reads.
      expect((await store.getInstance('a'))?.is_alive).toBe(true);
      expect(await store.sweepLiveness()).toEqual([]);
      expect(await acquireId(store, 'least_load')).toBe('a');
      // Failed probes still take an instance out at once.
      expect((await store.getInstance('gone'))?.is_alive).toBe(false);
      expect(await store.claimControlPlane('cp-2', 10_000, 10_000)).toBe(true);
      expect((await store.getInstance('a'))?.is_alive).toBe(true);
      await sleep(500);
      // Claimed with a 10 s renewal: judged now, and a's ttl has lapsed.
      expect((await store.getInstance('a'))?.is_alive).toBe(false);
      expect(await store.sweepLiveness()).toEqual(['a']);
    });

    it('judges liveness now while the holder is within its renewal interval: the ttl is exact', async () => {
      await store.register(record('a', { ttl_s: 0.3 }));
      await store.claimControlPlane('cp-1', 5000, 2000);
      await sleep(500);
      expect((await store.getInstance('a'))?.is_alive).toBe(false);
      expect(await store.sweepLiveness()).toEqual(['a']);
    });

    it('freezes liveness as soon as the control plane stops claiming, before its lease lapses', async () => {
      await store.register(record('a', { ttl_s: 0.3 }));
      // A long lease renewed every 100 ms, then no renewal: the ttl runs out while the lease is still held.
      await store.claimControlPlane('cp-1', 5000, 100);
      await sleep(500);
      expect((await store.getInstance('a'))?.is_alive).toBe(true);
      expect(await store.sweepLiveness()).toEqual([]);
      expect(await acquireId(store, 'least_load')).toBe('a');
      // The holder renews: liveness is judged now again, and a's ttl has lapsed.
      await store.claimControlPlane('cp-1', 5000, 100);
      expect((await store.getInstance('a'))?.is_alive).toBe(false);
      expect(await store.sweepLiveness()).toEqual(['a']);
    });

    it('reports unknown model, none alive and all full distinctly', async () => {
      expect((await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' })).kind).toBe('unknown_model');
      await store.register(record('a', { ttl_s: 0.2, max_inflight: 1 }));
      expect((await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' })).kind).toBe('acquired');
      expect((await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' })).kind).toBe('all_full');
      await sleep(300);
      expect((await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' })).kind).toBe('none_alive');
    });

    it('picks the least loaded, honours weight, max_inflight and exclusions', async () => {
      await store.register(record('a', { max_inflight: 1 }));
      await store.register(record('b', { weight: 2 }));
      await store.register(record('c'));
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) {
        const r = await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' });
        if (r.kind === 'acquired') ids.push(r.instance_id);
      }
      // a: capped at 1; b: weight 2 takes twice c's share
      expect(ids.filter((x) => x === 'a')).toHaveLength(1);
      expect(ids.filter((x) => x === 'b')).toHaveLength(3);
      expect(ids.filter((x) => x === 'c')).toHaveLength(2);
      const r = await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load', exclude: ['b'] });
      expect(r).toMatchObject({ kind: 'acquired', instance_id: 'c' });
      expect((await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load', exclude: ['a', 'b', 'c'] })).kind).toBe('none_alive');
    });

    it('breaks in-flight ties by qps_1m, then round-robins, so a new instance gets traffic at once', async () => {
      await store.register(record('a'));
      await store.register(record('b'));
      await store.heartbeat('a', { qps_1m: 10 });
      await store.heartbeat('b', { qps_1m: 1 });
      const first = await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' });
      expect(first).toMatchObject({ instance_id: 'b', url: record('b').url, inflight: 1 });
      await store.release('p1', 'b');
      await store.register(record('c'));
      const next = await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' });
      expect(next).toMatchObject({ instance_id: 'c' });
    });

    it('round_robin cycles through every alive instance', async () => {
      for (const id of ['a', 'b', 'c']) await store.register(record(id));
      const seen = new Set<string>();
      for (let i = 0; i < 3; i++) {
        const r = await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'round_robin' });
        if (r.kind === 'acquired') seen.add(r.instance_id);
      }
      expect([...seen].sort()).toEqual(['a', 'b', 'c']);
    });

    it('round_robin walks mixed-case ids in byte order, as libs/routing does, whatever the server locale', async () => {
      expect(await roundRobinWalk(store)).toEqual(BYTE_ORDER);
    });

    it('random and power_of_two pick alive instances', async () => {
      for (const id of ['a', 'b']) await store.register(record(id));
      for (const strategy of ['random', 'power_of_two'] as const) {
        const r = await store.acquire({ proxyId: 'p1', model: 'm', strategy });
        expect(['a', 'b']).toContain(r.kind === 'acquired' ? r.instance_id : r.kind);
      }
    });

    it('is atomic: many parallel acquirers on equal loads spread exactly and the counts equal the acquisitions', async () => {
      const ids = ['a', 'b', 'c', 'd'];
      for (const id of ids) await store.register(record(id));
      const n = 200;
      const results = await Promise.all(
        Array.from({ length: n }, (_, i) => store.acquire({ proxyId: `p${i % 5}`, model: 'm', strategy: 'least_load' })),
      );
      const taken = new Map<string, number>();
      for (const r of results) {
        expect(r.kind).toBe('acquired');
        if (r.kind === 'acquired') taken.set(r.instance_id, (taken.get(r.instance_id) ?? 0) + 1);
      }
      const states = await store.listInstances();
      expect(states.reduce((s, x) => s + x.load.inflight, 0)).toBe(n);
      for (const s of states) {
        // No two acquirers took the same stale minimum: least_load keeps equal instances exactly even.
        expect(s.load.inflight).toBe(n / ids.length);
        expect(s.load.inflight).toBe(taken.get(s.instance_id));
        expect(Object.values(s.inflight_by_proxy).reduce((a, b) => a + b, 0)).toBe(s.load.inflight);
      }
      // The seen counts after acquisition are all distinct per instance: 1..50 each.
      for (const id of ids) {
        const counts = results.filter((r) => r.kind === 'acquired' && r.instance_id === id).map((r) => (r as { inflight: number }).inflight);
        expect(counts.sort((x, y) => x - y)).toEqual(Array.from({ length: n / ids.length }, (_, i) => i + 1));
      }
    });

    it('is atomic at 1,000 instances: 200 parallel least_load acquires never put one instance over 1 more than the minimum', async () => {
      const ids = Array.from({ length: 1000 }, (_, i) => `i${String(i).padStart(4, '0')}`);
      for (const id of ids) await store.register(record(id));
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => store.acquire({ proxyId: `p${i % 8}`, model: 'm', strategy: 'least_load' })),
      );
      // Every acquirer saw the minimum of 0 and took a different instance: each answer is a count of 1.
      expect(results.every((r) => r.kind === 'acquired' && r.inflight === 1)).toBe(true);
      const taken = results.map((r) => (r as { instance_id: string }).instance_id);
      expect(new Set(taken).size).toBe(200);
      const states = await store.listInstances();
      expect(states.reduce((s, x) => s + x.load.inflight, 0)).toBe(200);
      expect(Math.max(...states.map((x) => x.load.inflight))).toBe(1);
    }, 30_000);

    it('least_load round-robins among ties in id order, skipping excluded ones, with the model ticket', async () => {
      for (const id of ['d', 'b', 'a', 'c']) await store.register(record(id));
      expect(await acquireId(store, 'least_load', ['b'])).toBe('a'); // ticket 0 over [a, c, d]
      expect(await acquireId(store, 'least_load', ['c'])).toBe('d'); // ticket 1 over [b, d]
      expect(await acquireId(store, 'least_load')).toBe('b'); // ticket 2 over [b, c]
      expect(await acquireId(store, 'least_load')).toBe('c'); // ticket 3 over [c]
      expect(await acquireId(store, 'least_load', ['a', 'b'])).toBe('c'); // ticket 4 over [c, d]: 4 % 2 = 0
      // round_robin shares the ticket and ignores load: ticket 5 over [a, c, d] -> 5 % 3 = 2.
      expect(await acquireId(store, 'round_robin', ['b'])).toBe('d');
    });

    it('skips an instance whose ttl lapsed in every strategy, before any sweep', async () => {
      await useRandom([0, 0.99]);
      await store.register(record('a', { ttl_s: 0.2 }));
      await store.register(record('b'));
      await store.register(record('c', { ttl_s: 0.2 }));
      await sleep(300);
      for (const strategy of ['least_load', 'round_robin', 'random', 'power_of_two'] as const) {
        for (let i = 0; i < 3; i++) expect(await acquireId(store, strategy)).toBe('b');
      }
      expect(await store.sweepLiveness()).toEqual(['a', 'c']);
      await store.heartbeat('a', {});
      expect(await acquireId(store, 'least_load')).toBe('a');
    });

    it('affinity: a key bound at release sends later acquires there, from any proxy, while it has room; hard waits when it is full', async () => {
      await store.register(record('a', { max_inflight: 3 }));
      await store.register(record('b'));
      await store.register(record('c'));
      const hard = { key: 'r:resp_1', mode: 'hard' as const, ttlMs: 60_000 };
      // No binding yet: an ordinary pick, nothing to report.
      const first = await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load', affinity: hard, exclude: ['b', 'c'] });
      expect(first).toMatchObject({ kind: 'acquired', instance_id: 'a' });
      expect(first.kind === 'acquired' && first.affinity).toBeFalsy();
      expect(await acquireId(store, 'least_load', ['b', 'c'])).toBe('a');
      await store.release('p1', 'a', { key: 'r:resp_1', ttlMs: 60_000 });
      // a holds 1, b and c none: least_load alone would not pick a, the bound key does.
      for (const proxyId of ['p2', 'p1']) {
        expect(await store.acquire({ proxyId, model: 'm', strategy: 'least_load', affinity: hard })).toMatchObject({ kind: 'acquired', instance_id: 'a', affinity: 'hit' });
      }
      expect(await inflightOf('a')).toBe(3);
      // Full: a hard key waits for its instance; a soft one bound there goes elsewhere and is bound anew.
      expect(await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load', affinity: hard })).toEqual({ kind: 'all_full' });
      const softKey = { key: 's:x', mode: 'soft' as const, ttlMs: 60_000 };
      await store.release('p1', 'a', { key: 's:x', ttlMs: 60_000 });
      expect(await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load', affinity: hard })).toMatchObject({ instance_id: 'a', affinity: 'hit' });
      const soft = await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load', affinity: softKey });
      expect(soft).toMatchObject({ kind: 'acquired', affinity: 'gone' });
      const moved = soft.kind === 'acquired' ? soft.instance_id : '';
      expect(['b', 'c']).toContain(moved);
      expect(await store.acquire({ proxyId: 'p2', model: 'm', strategy: 'least_load', affinity: softKey })).toMatchObject({ kind: 'acquired', instance_id: moved, affinity: 'hit' });
    });

    it('affinity: a key whose instance is gone (marked down, removed, excluded, another model) falls back to the strategy and says so', async () => {
      await store.register(record('a'));
      await store.register(record('b'));
      await store.register(record('x', { models: ['other'] }));
      const hard = (key: string) => ({ key, mode: 'hard' as const, ttlMs: 60_000 });
      await store.release('p1', 'a', { key: 'k1', ttlMs: 60_000 });
      await store.release('p1', 'x', { key: 'k2', ttlMs: 60_000 });
      expect(await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load', affinity: hard('k1'), exclude: ['a'] })).toMatchObject({ kind: 'acquired', instance_id: 'b', affinity: 'gone' });
      expect(await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load', affinity: hard('k2') })).toMatchObject({ kind: 'acquired', affinity: 'gone' });
      await store.markDown('a');
      expect(await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load', affinity: hard('k1') })).toMatchObject({ kind: 'acquired', instance_id: 'b', affinity: 'gone' });
      await store.heartbeat('a', {});
      expect(await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load', affinity: hard('k1') })).toMatchObject({ kind: 'acquired', instance_id: 'a', affinity: 'hit' });
      await store.remove('a');
      expect(await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load', affinity: hard('k1') })).toMatchObject({ kind: 'acquired', instance_id: 'b', affinity: 'gone' });
    });

    it('affinity: a binding lapses after its ttl', async () => {
      await store.register(record('a'));
      await store.register(record('b'));
      await store.release('p1', 'b', { key: 'k', ttlMs: 150 });
      expect(await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load', affinity: { key: 'k', mode: 'hard', ttlMs: 150 } })).toMatchObject({ instance_id: 'b', affinity: 'hit' });
      await sleep(250);
      const r = await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load', affinity: { key: 'k', mode: 'hard', ttlMs: 150 } });
      expect(r).toMatchObject({ kind: 'acquired', instance_id: 'a' });
      expect(r.kind === 'acquired' && r.affinity).toBeFalsy();
    });

    it('batch: releases and acquires in one call answer, in order, as their own calls would, and leave the same counts', async () => {
      if (!store.batch) return;
      await store.register(record('a', { max_inflight: 2 }));
      await store.register(record('b'));
      const acquire = (exclude: string[] = [], affinity?: { key: string; mode: 'hard' | 'soft'; ttlMs: number }) => ({ kind: 'acquire' as const, request: { proxyId: 'p1', model: 'm', strategy: 'least_load' as const, exclude, ...(affinity ? { affinity } : {}) } });
      const answers = await store.batch('p1', [
        acquire(['b']),
        acquire(['b']),
        acquire(['b']),
        { kind: 'release', instanceId: 'a', bind: { key: 'k', ttlMs: 60_000 } },
        { kind: 'release', instanceId: 'b' },
        acquire([], { key: 'k', mode: 'hard', ttlMs: 60_000 }),
        { kind: 'acquire', request: { proxyId: 'p1', model: 'nope', strategy: 'least_load' } },
        acquire(['a']),
      ]);
      expect(answers).toEqual([
        { kind: 'acquired', instance_id: 'a', url: record('a').url, inflight: 1 },
        { kind: 'acquired', instance_id: 'a', url: record('a').url, inflight: 2 },
        { kind: 'all_full' },
        1,
        null,
        { kind: 'acquired', instance_id: 'a', url: record('a').url, inflight: 2, affinity: 'hit' },
        { kind: 'unknown_model' },
        { kind: 'acquired', instance_id: 'b', url: record('b').url, inflight: 1 },
      ]);
      expect(await inflightOf('a')).toBe(2);
      expect(await inflightOf('b')).toBe(1);
      expect((await store.getInstance('a'))?.inflight_by_proxy).toEqual({ p1: 2 });
      // The short form: nothing excluded, no affinity.
      expect(await store.batch('p1', [{ kind: 'acquire', request: { proxyId: 'p1', model: 'm', strategy: 'least_load' } }])).toEqual([{ kind: 'acquired', instance_id: 'b', url: record('b').url, inflight: 2 }]);
    });

    it('batch: random and power_of_two acquires use their draws in a batch as alone', async () => {
      await useRandom([0.5, 0.1]);
      if (!store.batch) return;
      for (const id of ['a', 'b', 'c']) await store.register(record(id));
      const plain = (strategy: 'random' | 'power_of_two') => ({ kind: 'acquire' as const, request: { proxyId: 'p1', model: 'm', strategy } });
      // random: floor(0.5 × 3) = 1, b each time; power_of_two: b (0.5) against a (0.1), the less loaded.
      const answers = await store.batch('p1', [plain('random'), plain('random')]);
      expect(answers.map((a) => (a as { instance_id?: string }).instance_id)).toEqual(['b', 'b']);
      const two = await store.batch('p1', [plain('power_of_two')]);
      expect((two[0] as { instance_id?: string }).instance_id).toBe('a');
    });

    it('releases exactly once per acquisition and never below 0', async () => {
      await store.register(record('a'));
      await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' });
      expect(await store.release('p1', 'a')).toBe(0);
      expect(await store.release('p1', 'a')).toBeNull();
      expect(await store.release('p2', 'a')).toBeNull();
      expect(await inflightOf('a')).toBe(0);
    });

    it('only lets a proxy release its own contribution', async () => {
      await store.register(record('a'));
      await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' });
      expect(await store.release('p2', 'a')).toBeNull();
      expect((await store.getInstance('a'))?.inflight_by_proxy).toEqual({ p1: 1 });
    });

    it('never resurrects a removed instance on release, and a re-registered one starts at 0', async () => {
      await store.register(record('a'));
      await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' });
      expect(await store.remove('a')).toBe(true);
      expect(await store.remove('a')).toBe(false);
      expect(await store.release('p1', 'a')).toBeNull();
      expect(await store.getInstance('a')).toBeNull();
      expect(await store.listInstances()).toEqual([]);
      await store.register(record('a'));
      expect(await inflightOf('a')).toBe(0);
      expect(await store.release('p1', 'a')).toBeNull();
      expect(await inflightOf('a')).toBe(0);
    });

    it('keeps each instance count equal to the sum of per-proxy contributions', async () => {
      await store.register(record('a'));
      await store.register(record('b'));
      for (let i = 0; i < 3; i++) await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' });
      for (let i = 0; i < 3; i++) await store.acquire({ proxyId: 'p2', model: 'm', strategy: 'least_load' });
      for (const s of await store.listInstances()) {
        expect(Object.values(s.inflight_by_proxy).reduce((x, y) => x + y, 0)).toBe(s.load.inflight);
      }
      expect((await store.listInstances()).reduce((x, s) => x + s.load.inflight, 0)).toBe(6);
    });

    it('reconciles a proxy contribution from its local truth', async () => {
      await store.register(record('a'));
      await store.register(record('b'));
      await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' });
      await store.acquire({ proxyId: 'p2', model: 'm', strategy: 'least_load' });
      await store.reconcile('p1', { a: 3, b: 1, ghost: 4 });
      expect((await store.getInstance('a'))?.inflight_by_proxy).toEqual({ p1: 3 });
      expect((await store.getInstance('b'))?.inflight_by_proxy).toEqual({ p1: 1, p2: 1 });
      expect(await inflightOf('a')).toBe(3);
      expect(await inflightOf('b')).toBe(2);
      await store.reconcile('p1', {});
      expect(await inflightOf('a')).toBe(0);
      expect(await inflightOf('b')).toBe(1);
      expect(await store.getInstance('ghost')).toBeNull();
    });

    it('removes an expired proxy lease with its contributions at the second sweep that finds it expired, and keeps live ones', async () => {
      extra.push(store);
      store = await makeStore({ reapGraceMs: 150 });
      await store.register(record('a'));
      await store.renewLease({ proxy_id: 'dead', inflight_http: 2, queued: {}, draining: false, degraded: false }, 200);
      await store.renewLease({ proxy_id: 'live', inflight_http: 1, queued: { m: 1 }, draining: true, degraded: false }, 30_000);
      await store.acquire({ proxyId: 'dead', model: 'm', strategy: 'least_load' });
      await store.acquire({ proxyId: 'dead', model: 'm', strategy: 'least_load' });
      await store.acquire({ proxyId: 'live', model: 'm', strategy: 'least_load' });
      expect(await store.reapExpiredLeases()).toEqual([]);
      await sleep(300);
      expect((await store.listProxies()).map((p) => [p.proxy_id, p.alive])).toEqual([
        ['dead', false],
        ['live', true],
      ]);
      // The first sweep that finds it expired only takes note; the lease gets the grace to renew.
      expect(await store.reapExpiredLeases()).toEqual([]);
      expect(await inflightOf('a')).toBe(3);
      await sleep(100);
      expect(await store.reapExpiredLeases()).toEqual([]);
      await sleep(100);
      expect(await store.reapExpiredLeases()).toEqual(['dead']);
      expect(await inflightOf('a')).toBe(1);
      expect((await store.getInstance('a'))?.inflight_by_proxy).toEqual({ live: 1 });
      const proxies = await store.listProxies();
      expect(proxies).toHaveLength(1);
      expect(proxies[0]).toMatchObject({ proxy_id: 'live', inflight_http: 1, queued: { m: 1 }, draining: true, alive: true });
      // A release after the reap does not double-subtract.
      expect(await store.release('dead', 'a')).toBeNull();
      expect(await inflightOf('a')).toBe(1);
    });

    it('never reaps a lease renewed after a sweep found it expired', async () => {
      extra.push(store);
      store = await makeStore({ reapGraceMs: 100 });
      await store.register(record('a'));
      await store.renewLease(info('late'), 100);
      await store.acquire({ proxyId: 'late', model: 'm', strategy: 'least_load' });
      await sleep(150);
      expect(await store.reapExpiredLeases()).toEqual([]);
      await store.renewLease(info('late'), 100);
      await sleep(150);
      // Expired again, but this sweep is the first to see it since the renewal.
      expect(await store.reapExpiredLeases()).toEqual([]);
      expect(await inflightOf('a')).toBe(1);
      await sleep(120);
      expect(await store.reapExpiredLeases()).toEqual(['late']);
      expect(await inflightOf('a')).toBe(0);
    });

    it('keeps request counters per proxy with its lease: summed over alive proxies, replaced by a renewal that carries them, gone with the lease', async () => {
      extra.push(store);
      store = await makeStore({ reapGraceMs: 100 });
      await store.register(record('a'));
      await store.register(record('b'));
      const stats = (requests: number, errors = 0, gone = 0, ttftBucket?: number): InstanceStats => {
        const ttft_ms = new Array<number>(TTFT_BUCKETS_MS.length + 1).fill(0);
        if (ttftBucket !== undefined) ttft_ms[ttftBucket] = requests;
        return { requests, errors, client_gone: gone, ttft_ms };
      };
      const statsOf = async () => (await store.fleet()).stats;
      await store.renewLease(info('p1'), 30_000, { a: stats(10, 2, 1, 3), b: stats(4) });
      await store.renewLease(info('p2'), 30_000, { a: stats(5, 0, 0, 3) });
      await store.renewLease(info('short'), 200, { a: stats(100) });
      expect(await statsOf()).toEqual({ a: { ...stats(115, 2, 1), ttft_ms: stats(15, 0, 0, 3).ttft_ms }, b: stats(4) });
      // A renewal without stats keeps the last ones; one with stats replaces them.
      await store.renewLease(info('p2'), 30_000);
      await store.renewLease(info('p1'), 30_000, { a: stats(12, 2, 1) });
      await sleep(300);
      // 'short' expired: its counters no longer count, whether or not it is reaped yet.
      expect(await statsOf()).toEqual({ a: { ...stats(17, 2, 1), ttft_ms: stats(5, 0, 0, 3).ttft_ms } });
      await store.dropLease('p2');
      await store.renewLease(info('p2'), 30_000);
      expect(await statsOf()).toEqual({ a: stats(12, 2, 1) });
      expect(await store.reapExpiredLeases()).toEqual([]);
      await sleep(150);
      expect(await store.reapExpiredLeases()).toEqual(['short']);
      // Renewed again, the reaped proxy starts from what it writes, not from its old counters.
      await store.renewLease(info('short'), 30_000);
      expect(await statsOf()).toEqual({ a: stats(12, 2, 1) });
    });

    it('drops a lease and its contributions at once', async () => {
      await store.register(record('a'));
      await store.renewLease({ proxy_id: 'p1', inflight_http: 0, queued: {}, draining: true, degraded: false }, 30_000);
      await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' });
      await store.dropLease('p1');
      expect(await inflightOf('a')).toBe(0);
      expect(await store.listProxies()).toEqual([]);
    });

    it('syncs the registry: everything without a cursor or after a registry change, then only liveness and engine changes, else nothing', async () => {
      await store.register(record('a', { ttl_s: 0.3 }));
      await store.register(record('b', { weight: 2 }));
      const first = await store.syncRegistry(null);
      expect(first.kind).toBe('full');
      if (first.kind !== 'full') return;
      const a = await store.getInstance('a');
      expect(first.instances[0]).toEqual({ ...record('a', { ttl_s: 0.3 }), registered_at: a?.registered_at, is_alive: true, qps_1m: null, waiting: null, saturated: false });
      expect(first.instances.map((i) => i.instance_id)).toEqual(['a', 'b']);
      let cursor = first.cursor;
      const next = async () => {
        const r = await store.syncRegistry(cursor);
        cursor = r.cursor;
        return r.kind === 'changes' ? r.changed : r.kind;
      };
      expect(await next()).toBe('unchanged');
      await store.heartbeat('b', { qps_1m: 3 });
      await store.heartbeat('a', {});
      expect(await next()).toEqual([{ instance_id: 'b', is_alive: true, qps_1m: 3, waiting: null, saturated: false }]);
      await store.heartbeat('b', { qps_1m: 3 });
      await store.reportEngine('b', vllm(2), false);
      await store.reportEngine('b', vllm(2), false);
      expect(await next()).toEqual([{ instance_id: 'b', is_alive: true, qps_1m: 3, waiting: 2, saturated: false }]);
      await store.reportEngine('b', { ...vllm(2), scraped_at: 99 }, false);
      expect(await next()).toBe('unchanged');
      await store.markDown('b');
      await sleep(400);
      // a's ttl lapsed with no sweep yet: a sync reports it all the same.
      expect(await next()).toEqual([
        { instance_id: 'a', is_alive: false, qps_1m: null, waiting: null, saturated: false },
        { instance_id: 'b', is_alive: false, qps_1m: 3, waiting: 2, saturated: false },
      ]);
      expect(await next()).toBe('unchanged');
      await store.sweepLiveness();
      expect(await next()).toEqual([{ instance_id: 'a', is_alive: false, qps_1m: null, waiting: null, saturated: false }]);
      await store.heartbeat('b', {});
      expect(await next()).toEqual([{ instance_id: 'b', is_alive: true, qps_1m: 3, waiting: 2, saturated: false }]);
      await store.register(record('c'));
      const afterRegister = await store.syncRegistry(cursor);
      expect(afterRegister.kind === 'full' && afterRegister.instances.map((i) => [i.instance_id, i.is_alive])).toEqual([
        ['a', false],
        ['b', true],
        ['c', true],
      ]);
      cursor = afterRegister.cursor;
      expect(await next()).toBe('unchanged');
      await store.remove('a');
      const afterRemove = await store.syncRegistry(cursor);
      expect(afterRemove.kind === 'full' && afterRemove.instances.map((i) => i.instance_id)).toEqual(['b', 'c']);
    });

    it('keeps working with Redis- and Lua-special characters in ids, models and proxy ids', async () => {
      const model = 'm {x}:%ü ]]';
      const ids = ['a {1}:%', 'b}{', 'c ü'];
      for (const id of ids) await store.register(record(id, { models: [model] }));
      const proxyId = 'p {q}:% ü@1';
      const got: string[] = [];
      for (const strategy of ['least_load', 'round_robin', 'random', 'power_of_two'] as const) {
        const r = await store.acquire({ proxyId, model, strategy, exclude: ['b}{'] });
        expect(r.kind).toBe('acquired');
        if (r.kind === 'acquired') got.push(r.instance_id);
      }
      expect(got.every((id) => id !== 'b}{')).toBe(true);
      expect(await store.release(proxyId, got[0])).toBeGreaterThanOrEqual(0);
      await store.reconcile(proxyId, { [got[1]]: 1 });
      expect((await store.getInstance(got[1]))?.inflight_by_proxy).toEqual({ [proxyId]: 1 });
      expect(await store.markDown('c ü')).toBe('was_alive');
      const sync = await store.syncRegistry(null);
      expect(sync.kind === 'full' && sync.instances.map((i) => [i.instance_id, i.is_alive])).toEqual([
        ['a {1}:%', true],
        ['b}{', true],
        ['c ü', false],
      ]);
      expect((await store.fleet()).instances.map((i) => i.instance_id)).toEqual(['a {1}:%', 'b}{', 'c ü']);
      expect(await store.acquire({ proxyId, model: 'm {x}', strategy: 'least_load' })).toEqual({ kind: 'unknown_model' });
    });

    it('stores model info only into the record as read: a re-registration or removal in between wins; counts and selection untouched', async () => {
      await store.register(record('a', { api_key: 'sk-a', meta: { zone: 'x' } }));
      await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' });
      const read = recordOf((await store.getInstance('a'))!);
      const { registered_at: _r, ...asRead } = read;
      const v0 = (await store.snapshot()).version;
      const mi = { m: { max_model_len: 4096, owned_by: 'vllm' } };
      expect(await store.updateModelInfo(asRead, mi, 123)).toBe(true);
      const after = (await store.getInstance('a'))!;
      expect([after.model_info, after.model_info_at, after.api_key, after.load.inflight]).toEqual([mi, 123, 'sk-a', 1]);
      expect((await store.snapshot()).version).toBeGreaterThan(v0);
      expect((await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' })).kind).toBe('acquired');
      // The record as first read is stale now: a second writer with it changes nothing.
      expect(await store.updateModelInfo(asRead, {}, 456)).toBe(false);
      await store.remove('a');
      expect(await store.updateModelInfo(asRead, mi, 789)).toBe(false);
      expect(await store.getInstance('a')).toBeNull();
    });

    it('versions the registry snapshot on every change', async () => {
      const v0 = (await store.snapshot()).version;
      await store.register(record('a'));
      const s1 = await store.snapshot();
      expect(s1.version).toBeGreaterThan(v0);
      expect(s1.instances.map((i) => i.instance_id)).toEqual(['a']);
      expect(s1.instances[0]).toEqual({ ...record('a'), registered_at: s1.instances[0].registered_at });
      await store.heartbeat('a', { qps_1m: 1 });
      expect((await store.snapshot()).version).toBe(s1.version);
      await store.remove('a');
      const s2 = await store.snapshot();
      expect(s2.version).toBeGreaterThan(s1.version);
      expect(s2.instances).toEqual([]);
    });

    it('reads one instance as the pool read shows it, with every proxy contribution, and null for an unknown id', async () => {
      await store.register(record('a'));
      await store.register(record('b', { weight: 2, max_inflight: 5, tags: ['gpu'], meta: { zone: 'x' } }));
      await store.heartbeat('a', { qps_1m: 2.5, gpu_util: 0 });
      await store.renewLease({ proxy_id: 'p1', inflight_http: 0, queued: {}, draining: false, degraded: false }, 30_000);
      await store.renewLease({ proxy_id: 'idle', inflight_http: 0, queued: {}, draining: false, degraded: false }, 30_000);
      for (const [proxyId, id] of [['p1', 'a'], ['p1', 'a'], ['p2', 'a'], ['p2', 'b']]) {
        await store.acquire({ proxyId, model: 'm', strategy: 'least_load', exclude: [id === 'a' ? 'b' : 'a'] });
      }
      const a = await store.getInstance('a');
      expect(a?.load).toEqual({ inflight: 3, qps_1m: 2.5, gpu_util: 0 });
      expect(a?.inflight_by_proxy).toEqual({ p1: 2, p2: 1 });
      const b = await store.getInstance('b');
      expect(b).toMatchObject({ weight: 2, max_inflight: 5, tags: ['gpu'], meta: { zone: 'x' }, is_alive: true });
      expect(b?.load).toEqual({ inflight: 1, qps_1m: null, gpu_util: null });
      expect(b?.inflight_by_proxy).toEqual({ p2: 1 });
      expect(await store.listInstances()).toEqual([a, b]);
      expect(await store.getInstance('c')).toBeNull();
    });

    it('reads instances and proxy leases together: a contribution shows on its instance and its proxy in the same read', async () => {
      await store.register(record('a'));
      await store.register(record('b'));
      await store.renewLease({ proxy_id: 'p1', inflight_http: 3, queued: { m: 2 }, draining: true, degraded: false }, 30_000);
      await store.acquire({ proxyId: 'p1', model: 'm', strategy: 'least_load' });
      await store.acquire({ proxyId: 'p2', model: 'm', strategy: 'least_load' });
      const f = await store.fleet();
      expect(f.instances.map((i) => [i.instance_id, i.load.inflight, i.inflight_by_proxy])).toEqual([
        ['a', 1, { p1: 1 }],
        ['b', 1, { p2: 1 }],
      ]);
      // p2 never renewed: it appears with the lease its first acquire opened, already due.
      expect(f.proxies.map((p) => p.proxy_id)).toEqual(['p1', 'p2']);
      expect(f.proxies[0]).toMatchObject({ inflight_http: 3, queued: { m: 2 }, draining: true, alive: true });
      expect(f.proxies[1].lease_expires_at).toBeLessThanOrEqual(f.now);
      expect(f.now).toBeGreaterThanOrEqual(f.instances[1].last_seen_at);
      expect(f.instances.every((i) => i.is_alive)).toBe(true);
      await store.dropLease('p2');
      const after = await store.fleet();
      expect(after.instances.map((i) => i.inflight_by_proxy)).toEqual([{ p1: 1 }, {}]);
      expect(after.proxies.map((p) => p.proxy_id)).toEqual(['p1']);
    });

    it('keeps each fleet read consistent while other proxies acquire', async () => {
      for (const id of ['a', 'b', 'c']) await store.register(record(id));
      const reads: Promise<Awaited<ReturnType<LoadStore['fleet']>>>[] = [];
      const acquires: Promise<unknown>[] = [];
      for (let i = 0; i < 40; i++) {
        acquires.push(store.acquire({ proxyId: `q${i}`, model: 'm', strategy: 'least_load' }));
        if (i % 4 === 0) reads.push(store.fleet());
      }
      await Promise.all(acquires);
      reads.push(store.fleet());
      for (const f of await Promise.all(reads)) {
        // Each q acquires once and only then holds a lease, so contributors and lease holders are the same set.
        const contributors = f.instances.flatMap((i) => Object.keys(i.inflight_by_proxy)).sort();
        expect(contributors).toEqual(f.proxies.map((p) => p.proxy_id));
        expect(f.instances.reduce((s, i) => s + i.load.inflight, 0)).toBe(f.proxies.length);
      }
      expect((await reads[reads.length - 1]).proxies).toHaveLength(40);
    });
  });
}
