import { emptyInstanceStats, METRIC_SOURCE, NULL_SEMANTICS, ProxyInfo, UNKNOWN_ENGINE } from '@switchyard/contracts';
import { MemoryLoadStore } from '@switchyard/load-store';
import { readFleet } from '../common/fleet';
import { queuedByProxy, toDebugStatus, toInstanceLoads } from './debug-view';

const T0 = Date.UTC(2025, 0, 1);
const record = (id: string, models: string[], extra: { max_inflight?: number; weight?: number } = {}) => ({
  instance_id: id,
  url: `http://127.0.0.1:1/${id}`,
  models,
  endpoints: ['/v1/chat/completions'],
  tags: [],
  weight: extra.weight ?? 1,
  max_inflight: extra.max_inflight ?? null,
  meta: {},
  ttl_s: 10,
});
const info = (proxy_id: string, queued: Record<string, number> = {}, more: Partial<ProxyInfo> = {}): ProxyInfo => ({
  proxy_id,
  inflight_http: 0,
  queued,
  draining: false,
  degraded: false,
  ...more,
});

/** Two instances, two proxies holding slots, one proxy queueing; driven through the real memory store. */
async function fleetAt() {
  let now = T0;
  const store = new MemoryLoadStore({ now: () => now, random: () => 0 });
  await store.register(record('a', ['llama', 'mistral'], { max_inflight: 4, weight: 2 }));
  await store.register(record('b', ['llama']));
  await store.renewLease(info('p1', { llama: 2, qwen: 5 }), 5000);
  await store.renewLease(info('p2', { mistral: 3 }, { draining: true, inflight_http: 7 }), 5000);
  await store.acquire({ proxyId: 'p1', model: 'mistral', strategy: 'least_load' });
  await store.acquire({ proxyId: 'p1', model: 'mistral', strategy: 'least_load' });
  await store.acquire({ proxyId: 'p2', model: 'mistral', strategy: 'least_load' });
  return { store, advance: (ms: number) => (now += ms) };
}

describe('instance loads view', () => {
  it('shows the shared sum, each proxy share, null for never-reported metrics and the constants', async () => {
    const { store } = await fleetAt();
    const view = toInstanceLoads(await readFleet(store), false, T0);
    expect(view.metric_source).toEqual(METRIC_SOURCE);
    expect(view.null_semantics).toBe(NULL_SEMANTICS);
    expect(view.generated_at).toBe(new Date(T0).toISOString());
    expect(view.instances).toEqual([
      {
        instance_id: 'a',
        url: 'http://127.0.0.1:1/a',
        models: ['llama', 'mistral'],
        alive: true,
        is_alive: true,
        weight: 2,
        max_inflight: 4,
        inflight: 3,
        inflight_by_proxy: { p1: 2, p2: 1 },
        qps_1m: null,
        gpu_util: null,
        last_seen_at: new Date(T0).toISOString(),
        queued_by_proxy: { p1: 2, p2: 3 },
        engine: UNKNOWN_ENGINE,
        stats: emptyInstanceStats(),
      },
      {
        instance_id: 'b',
        url: 'http://127.0.0.1:1/b',
        models: ['llama'],
        alive: true,
        is_alive: true,
        weight: 1,
        max_inflight: null,
        inflight: 0,
        inflight_by_proxy: {},
        qps_1m: null,
        gpu_util: null,
        last_seen_at: new Date(T0).toISOString(),
        queued_by_proxy: { p1: 2 },
        engine: UNKNOWN_ENGINE,
        stats: emptyInstanceStats(),
      },
    ]);
  });

  it('shows what the engine reported, with scraped_at as an ISO time, and unknown fields as null', async () => {
    const { store } = await fleetAt();
    await store.reportEngine('a', { engine: 'sglang', running: 3, waiting: 0, kv_cache_usage: null, scraped_at: T0 - 1500, scrape_error: null }, false);
    const [a] = toInstanceLoads(await readFleet(store), false, T0).instances;
    expect(a.engine).toEqual({ engine: 'sglang', running: 3, waiting: 0, kv_cache_usage: null, scraped_at: new Date(T0 - 1500).toISOString(), scrape_error: null });
  });

  it('reports a measured zero as 0 and keeps an unreported metric null', async () => {
    const { store } = await fleetAt();
    await store.heartbeat('a', { qps_1m: 0, gpu_util: 0 });
    await store.heartbeat('b', { qps_1m: 4.5 });
    const [a, b] = toInstanceLoads(await readFleet(store), false, T0).instances;
    expect([a.qps_1m, a.gpu_util]).toEqual([0, 0]);
    expect([b.qps_1m, b.gpu_util]).toEqual([4.5, null]);
  });

  it('shows each instance its request counters summed over the alive proxies, zeros where none counted', async () => {
    const { store, advance } = await fleetAt();
    const counted = (requests: number, errors: number, client_gone: number, fast: number) => {
      const s = emptyInstanceStats();
      s.ttft_ms[1] = fast;
      return { requests, errors, client_gone, ttft_ms: s.ttft_ms };
    };
    await store.renewLease(info('p1'), 5000, { a: counted(10, 1, 2, 7) });
    await store.renewLease(info('p2'), 2000, { a: counted(5, 0, 1, 4) });
    const [a, b] = toInstanceLoads(await readFleet(store), false, T0).instances;
    expect(a.stats).toEqual(counted(15, 1, 3, 11));
    expect(b.stats).toEqual(emptyInstanceStats());
    // p2's lease ran out: its counters leave the sums.
    advance(3000);
    const [later] = toInstanceLoads(await readFleet(store), false, T0).instances;
    expect(later.stats).toEqual(counted(10, 1, 2, 7));
  });

  it('lists proxies from their leases, with ISO times', async () => {
    const { store } = await fleetAt();
    const { proxies } = toInstanceLoads(await readFleet(store), false, T0);
    expect(proxies).toEqual([
      { proxy_id: 'p1', alive: true, draining: false, degraded: false, inflight_http: 0, queued: { llama: 2, qwen: 5 }, last_seen_at: new Date(T0).toISOString(), lease_expires_at: new Date(T0 + 5000).toISOString() },
      { proxy_id: 'p2', alive: true, draining: true, degraded: false, inflight_http: 7, queued: { mistral: 3 }, last_seen_at: new Date(T0).toISOString(), lease_expires_at: new Date(T0 + 5000).toISOString() },
    ]);
  });

  it('leaves out expired instances and proxies unless include_expired, and ignores the queue of an expired proxy', async () => {
    const { store, advance } = await fleetAt();
    advance(6000);
    await store.renewLease(info('p1', { llama: 2 }), 5000);
    await store.heartbeat('b', {});
    advance(5000);
    const fleet = await readFleet(store);
    const alive = toInstanceLoads(fleet, false, T0);
    expect(alive.instances.map((i) => i.instance_id)).toEqual(['b']);
    expect(alive.proxies.map((p) => p.proxy_id)).toEqual(['p1']);
    const all = toInstanceLoads(fleet, true, T0);
    expect(all.instances.map((i) => [i.instance_id, i.alive])).toEqual([['a', false], ['b', true]]);
    expect(all.proxies.map((p) => [p.proxy_id, p.alive])).toEqual([['p1', true], ['p2', false]]);
    // p2's lease ran out: its queue no longer counts, its slots do until the reaper removes them.
    expect(all.instances[0].queued_by_proxy).toEqual({ p1: 2 });
    expect(all.instances[0].inflight_by_proxy).toEqual({ p1: 2, p2: 1 });
  });
});

describe('queuedByProxy', () => {
  it('sums the queues of the instance models and omits zero entries', () => {
    const proxy = (proxy_id: string, queued: Record<string, number>, alive = true) => ({ ...info(proxy_id, queued), alive, lease_expires_at: 0, last_seen_at: 0 });
    expect(queuedByProxy(['x', 'y'], [proxy('p', { x: 1, y: 2, z: 9 }), proxy('q', { x: 0 }), proxy('r', { z: 4 }), proxy('dead', { x: 5 }, false)])).toEqual({ p: 3 });
  });
});

describe('debug status', () => {
  it('counts instances, proxies, draining, in-flight and queued requests', async () => {
    const { store, advance } = await fleetAt();
    expect(toDebugStatus(await readFleet(store), T0)).toEqual({
      status: 'ok',
      generated_at: new Date(T0).toISOString(),
      instances: { alive: 2, expired: 0 },
      proxies: { alive: 2, expired: 0, draining: 1 },
      inflight_total: 3,
      queued_total: 10,
    });
    // Past b's 10 s TTL and p2's lease; a and p1 reported in time.
    advance(11_000);
    await store.renewLease(info('p1', { llama: 1 }), 5000);
    await store.heartbeat('a', {});
    expect(toDebugStatus(await readFleet(store), T0)).toMatchObject({
      instances: { alive: 1, expired: 1 },
      proxies: { alive: 1, expired: 1, draining: 0 },
      inflight_total: 3,
      queued_total: 1,
    });
  });
});

describe('names that are JavaScript object keys, through the memory store', () => {
  it('count as ordinary models and proxies in the debug view and the status', async () => {
    const store = new MemoryLoadStore({ now: () => T0, random: () => 0 });
    await store.register(record('constructor', ['constructor', 'toString', '__proto__']));
    await store.register(record('plain', ['valueOf']));
    // JSON.parse gives `__proto__` as an own key, as a lease read from Redis would.
    await store.renewLease(info('toString', JSON.parse('{"constructor":2,"__proto__":1,"hasOwnProperty":4}') as Record<string, number>), 5000);
    await store.acquire({ proxyId: 'toString', model: 'constructor', strategy: 'least_load' });
    const fleet = await readFleet(store);
    const view = toInstanceLoads(fleet, false, T0);
    const byId = new Map(view.instances.map((i) => [i.instance_id, i]));
    expect(byId.get('constructor')?.queued_by_proxy).toEqual({ toString: 3 });
    expect(byId.get('constructor')?.inflight_by_proxy).toEqual({ toString: 1 });
    // `valueOf` is queued nowhere: the prototype's function is not a count.
    expect(byId.get('plain')?.queued_by_proxy).toEqual({});
    expect(toDebugStatus(fleet, T0)).toMatchObject({ inflight_total: 1, queued_total: 7 });
    expect(JSON.stringify(view.proxies[0].queued)).toBe('{"constructor":2,"__proto__":1,"hasOwnProperty":4}');
  });
  it('a count that is not a number is no count', () => {
    const p = { ...info('p', { m: 'three' as unknown as number, n: 2 }), alive: true, lease_expires_at: T0, last_seen_at: T0 };
    expect(queuedByProxy(['m', 'n'], [p])).toEqual({ p: 2 });
  });
});
