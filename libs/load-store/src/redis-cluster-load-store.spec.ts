import { RedisCluster } from '@switchyard/testing';
import { describeLoadStoreContract, record } from './load-store.contract';
import { RedisLoadStore } from './redis-load-store';

const cluster = new RedisCluster(3);
let pool = 0;

beforeAll(async () => {
  await cluster.start();
}, 30_000);
afterAll(async () => {
  await cluster.stop();
});

// The same contract on a real three-master Redis Cluster: each case's pool is one hash slot.
describeLoadStoreContract(
  'redis cluster',
  async (options) => new RedisLoadStore({ url: cluster.url, cluster: true, pool: `c${++pool}`, ...options }),
  async (s) => s.close(),
);

describe('RedisLoadStore on a Redis Cluster', () => {
  it('keeps each pool on one master, three pools on three masters, each serving its own models', async () => {
    // Pool names whose slots fall on three different masters.
    const byNode = new Map<number, string>();
    for (let i = 0; byNode.size < 3 && i < 1000; i++) {
      const name = `pool-${i}`;
      const node = cluster.nodeOf(`sy:{${name}}:rec`);
      if (!byNode.has(node)) byNode.set(node, name);
    }
    expect(byNode.size).toBe(3);
    const stores = [...byNode.values()].map((name) => new RedisLoadStore({ url: cluster.url, cluster: true, pool: name, reapGraceMs: 0 }));
    try {
      for (const [i, store] of stores.entries()) {
        for (const id of ['a', 'b']) await store.register(record(`${id}${i}`, { models: [`model-${i}`] }));
        await store.renewLease({ proxy_id: 'px', inflight_http: 0, queued: {}, draining: false, degraded: false }, 30_000);
        const r = await store.acquire({ proxyId: 'px', model: `model-${i}`, strategy: 'least_load' });
        expect(r).toMatchObject({ kind: 'acquired', instance_id: `a${i}` });
        await store.acquire({ proxyId: 'gone', model: `model-${i}`, strategy: 'least_load' });
        await store.reconcile('px', { [`a${i}`]: 2 });
        expect(await store.release('px', `a${i}`)).toBe(1);
        // Another pool's model is unknown here: a model lives in one pool.
        expect((await store.acquire({ proxyId: 'px', model: `model-${(i + 1) % 3}`, strategy: 'least_load' })).kind).toBe('unknown_model');
      }
      // 'gone' never renewed: the sweeps of each pool reap it there.
      for (const store of stores) await store.reapExpiredLeases();
      await new Promise((r) => setTimeout(r, 20));
      for (const store of stores) expect(await store.reapExpiredLeases()).toEqual(['gone']);
      for (const [i, store] of stores.entries()) {
        const f = await store.fleet();
        expect(f.instances.map((s) => [s.instance_id, s.load.inflight, s.inflight_by_proxy])).toEqual([
          [`a${i}`, 1, { px: 1 }],
          [`b${i}`, 0, {}],
        ]);
        const sync = await store.syncRegistry(null);
        expect(sync.kind === 'full' && sync.instances.map((s) => s.instance_id)).toEqual([`a${i}`, `b${i}`]);
      }
      // Every key a pool's scripts wrote lives on that pool's master.
      for (const [node, name] of byNode) {
        for (const key of ['rec', 'hot', 'inflight', 'leases', `ld:model-${[...byNode.values()].indexOf(name)}`]) expect(cluster.nodeOf(`sy:{${name}}:${key}`)).toBe(node);
      }
    } finally {
      for (const s of stores) await s.close();
    }
  }, 30_000);
});
