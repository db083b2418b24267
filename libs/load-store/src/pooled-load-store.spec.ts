import Redis, { Cluster } from 'ioredis';
import { RedisCluster } from '@switchyard/testing';
import { describeLoadStoreContract, record } from './load-store.contract';
import { PoolConflictError, PooledLoadStore } from './pooled-load-store';

const cluster = new RedisCluster(3);

beforeAll(async () => {
  await cluster.start();
}, 30_000);
afterAll(async () => {
  await cluster.stop();
});

/** Empties every master: the pooled store's default pool and pool map are shared by every case. */
async function flush(store: PooledLoadStore): Promise<void> {
  await Promise.all((store.redis as Cluster).nodes('master').map((n) => n.flushall()));
}

describeLoadStoreContract(
  'pooled, redis cluster',
  async (options) => new PooledLoadStore({ url: cluster.url, cluster: true, ...options }),
  async (s) => {
    await flush(s as PooledLoadStore);
    await s.close();
  },
);

describe('PooledLoadStore: pools on a Redis Cluster', () => {
  let store: PooledLoadStore;
  let other: PooledLoadStore;
  // Pool names whose slots fall on three different masters.
  const pools: string[] = [];
  beforeAll(() => {
    const nodes = new Set<number>();
    for (let i = 0; pools.length < 3 && i < 1000; i++) {
      const node = cluster.nodeOf(`sy:{pool-${i}}:rec`);
      if (!nodes.has(node)) {
        nodes.add(node);
        pools.push(`pool-${i}`);
      }
    }
  });
  beforeEach(() => {
    store = new PooledLoadStore({ url: cluster.url, cluster: true, reapGraceMs: 0 });
    other = new PooledLoadStore({ url: cluster.url, cluster: true, reapGraceMs: 0 });
  });
  afterEach(async () => {
    await flush(store);
    await store.close();
    await other.close();
  });

  it('routes each model to its pool on its own master; release, reconcile, reaping, the fleet read, the sync and the capacity channel work across pools', async () => {
    expect(new Set(pools.map((p) => cluster.nodeOf(`sy:{${p}}:rec`))).size).toBe(3);
    const sub = new Redis(cluster.url);
    const heard: string[] = [];
    try {
      await sub.subscribe(store.capacityChannel);
      sub.on('message', (_c: string, id: string) => heard.push(id));
      for (const [i, pool] of pools.entries()) {
        for (const id of ['a', 'b']) await store.register(record(`${id}${i}`, { models: [`model-${i}`], pool, max_inflight: 1 }));
      }
      await store.renewLease({ proxy_id: 'px', inflight_http: 0, queued: {}, draining: false, degraded: false }, 30_000);
      // A second proxy's store learns the model's pool from the shared map.
      for (let i = 0; i < 3; i++) {
        expect(await other.acquire({ proxyId: 'gone', model: `model-${i}`, strategy: 'least_load' })).toMatchObject({ kind: 'acquired', instance_id: `a${i}` });
        expect(await store.acquire({ proxyId: 'px', model: `model-${i}`, strategy: 'least_load' })).toMatchObject({ kind: 'acquired', instance_id: `b${i}` });
        expect((await store.acquire({ proxyId: 'px', model: `model-${i}`, strategy: 'least_load' })).kind).toBe('all_full');
      }
      // Each pool's keys live on that pool's master.
      for (const [i, pool] of pools.entries()) {
        for (const key of ['hot', 'inflight', 'leases', `ld:model-${i}`, `fl:model-${i}`]) expect(cluster.nodeOf(`sy:{${pool}}:${key}`)).toBe(cluster.nodeOf(`sy:{${pool}}:rec`));
        expect(await (store.redis as Cluster).exists(`sy:{${pool}}:fl:model-${i}`)).toBe(1);
      }
      expect(await store.release('px', 'b1')).toBe(0);
      expect(await store.release('px', 'b2')).toBe(0);
      await store.reconcile('px', { b0: 1 });
      // 'gone' never renewed: its lease in each pool is reaped (the second sweep), once per proxy.
      await store.reapExpiredLeases();
      await new Promise((r) => setTimeout(r, 20));
      expect(await store.reapExpiredLeases()).toEqual(['gone']);
      const f = await store.fleet();
      expect(f.instances.map((s) => [s.instance_id, s.load.inflight])).toEqual([
        ['a0', 0],
        ['a1', 0],
        ['a2', 0],
        ['b0', 1],
        ['b1', 0],
        ['b2', 0],
      ]);
      expect(f.proxies.map((p) => p.proxy_id)).toEqual(['px']);
      const sync = await other.syncRegistry(null);
      expect(sync.kind === 'full' && sync.instances.map((s) => [s.instance_id, s.pool])).toEqual([
        ['a0', pools[0]],
        ['a1', pools[1]],
        ['a2', pools[2]],
        ['b0', pools[0]],
        ['b1', pools[1]],
        ['b2', pools[2]],
      ]);
      await store.markDown('a2');
      const next = await other.syncRegistry(sync.cursor);
      expect(next.kind === 'changes' && next.changed.map((c) => [c.instance_id, c.is_alive])).toEqual([['a2', false]]);
      expect((await other.syncRegistry(next.cursor)).kind).toBe('unchanged');
      await new Promise((r) => setTimeout(r, 50));
      // Releases that freed capacity in two different pools, heard on the one channel (a reap is no release).
      expect(heard.sort()).toEqual(['b1', 'b2']);
    } finally {
      sub.disconnect();
    }
  }, 30_000);

  it('refuses a registration that would put a model in a second pool, naming both, and changes nothing', async () => {
    await store.register(record('a', { models: ['llama'], pool: pools[0] }));
    const attempt = store.register(record('b', { models: ['qwen', 'llama'], pool: pools[1] }));
    await expect(attempt).rejects.toBeInstanceOf(PoolConflictError);
    await expect(attempt).rejects.toThrow(`model 'llama' is served in pool '${pools[0]}'; an instance cannot serve it in pool '${pools[1]}'`);
    expect(await store.getInstance('b')).toBeNull();
    expect((await store.acquire({ proxyId: 'p', model: 'qwen', strategy: 'least_load' })).kind).toBe('unknown_model');
    expect((await store.listInstances()).map((i) => i.instance_id)).toEqual(['a']);
  });

  it('leads with one control-plane replica and writes its lease into every pool', async () => {
    for (const [i, pool] of pools.entries()) await store.register(record(`i${i}`, { models: [`m${i}`], pool, ttl_s: 0.3 }));
    expect(await store.claimControlPlane('cp-1', 150, 150)).toBe(true);
    expect(await other.claimControlPlane('cp-2', 150, 150)).toBe(false);
    await new Promise((r) => setTimeout(r, 500));
    // Every pool judges liveness at the last claim's watch: nobody expired.
    expect((await store.listInstances()).map((i) => i.is_alive)).toEqual([true, true, true]);
    expect(await store.renewLease({ proxy_id: 'p', inflight_http: 0, queued: {}, draining: false, degraded: false }, 1000)).toEqual({ controlPlaneAlive: false });
    expect(await other.claimControlPlane('cp-2', 10_000, 10_000)).toBe(true);
    expect(await store.renewLease({ proxy_id: 'p', inflight_http: 0, queued: {}, draining: false, degraded: false }, 1000)).toEqual({ controlPlaneAlive: true });
  });
});
