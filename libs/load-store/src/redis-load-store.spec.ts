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
});
