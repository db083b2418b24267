import Redis from 'ioredis';
import { RedisServer } from '@switchyard/testing';
import { describeLoadStoreContract } from './load-store.contract';
import { RedisLoadStore } from './redis-load-store';

const server = new RedisServer();
let pool = 0;

beforeAll(async () => {
  await server.start();
});
afterAll(async () => {
  await server.stop();
});

// Each case gets a pool of its own on the test's own server, so no flush is needed.
describeLoadStoreContract(
  'redis',
  async () => new RedisLoadStore({ url: server.url, pool: `t${++pool}` }),
  async (s) => s.close(),
);

describe('RedisLoadStore specifics', () => {
  it('shares counts between two store clients, as two proxies do', async () => {
    const a = new RedisLoadStore({ url: server.url, pool: 'shared' });
    const b = new RedisLoadStore({ url: server.url, pool: 'shared' });
    try {
      await a.register({ instance_id: 'x', url: 'http://127.0.0.1:1', models: ['m'], endpoints: [], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 30 });
      await a.register({ instance_id: 'y', url: 'http://127.0.0.1:2', models: ['m'], endpoints: [], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 30 });
      const r1 = await a.acquire({ proxyId: 'pa', model: 'm', strategy: 'least_load' });
      const r2 = await b.acquire({ proxyId: 'pb', model: 'm', strategy: 'least_load' });
      expect(r1.kind === 'acquired' && r2.kind === 'acquired' && r1.instance_id !== r2.instance_id).toBe(true);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('announces on its capacity channel when a release takes an instance below max_inflight, and only then', async () => {
    const store = new RedisLoadStore({ url: server.url, pool: 'cap' });
    const sub = new Redis(server.url);
    const heard: string[] = [];
    try {
      await sub.subscribe(store.capacityChannel);
      sub.on('message', (_c: string, id: string) => heard.push(id));
      await store.register({ instance_id: 'full', url: 'http://127.0.0.1:1', models: ['m'], endpoints: [], tags: [], weight: 1, max_inflight: 2, meta: {}, ttl_s: 30 });
      await store.register({ instance_id: 'free', url: 'http://127.0.0.1:2', models: ['f'], endpoints: [], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 30 });
      for (let i = 0; i < 2; i++) await store.acquire({ proxyId: 'p', model: 'm', strategy: 'least_load' });
      await store.acquire({ proxyId: 'p', model: 'f', strategy: 'least_load' });
      await store.release('p', 'free');
      await store.release('p', 'full'); // 2 -> 1: below max
      await store.release('p', 'full'); // 1 -> 0: was not at max
      await store.redis.ping();
      await new Promise((r) => setTimeout(r, 50));
      expect(heard).toEqual(['full']);
    } finally {
      sub.disconnect();
      await store.close();
    }
  });
});
