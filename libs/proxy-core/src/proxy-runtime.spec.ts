import { RedisLoadStore } from '@switchyard/load-store';
import { RedisServer } from '@switchyard/testing';
import { loadProxyConfig } from './proxy-config';
import { ProxyRuntime } from './proxy-runtime';

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
  store = new RedisLoadStore({ url: server.url, pool: `rt${++pool}` });
  await store.register({ instance_id: 'i', url: 'http://127.0.0.1:1', models: ['m'], endpoints: [], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 30 });
});
afterEach(async () => {
  await store.close();
});

const runtime = () => new ProxyRuntime(loadProxyConfig({ PROXY_NAME: 'spec', LOG_LEVEL: 'silent' }), store);
const inflight = async () => (await store.getInstance('i'))?.load.inflight;

describe('ProxyRuntime', () => {
  it('rewrites its contribution from local truth, healing a release the store never saw', async () => {
    const rt = runtime();
    const a = await store.acquire({ proxyId: rt.proxyId, model: 'm', strategy: 'least_load' });
    expect(a.kind).toBe('acquired');
    rt.slot('i');
    await store.acquire({ proxyId: rt.proxyId, model: 'm', strategy: 'least_load' });
    // This second slot's release was lost (the store was away), so the store still counts 2.
    expect(await inflight()).toBe(2);
    await rt.reconcile();
    expect(await inflight()).toBe(1);
  });

  it('does not erase an acquire that is counted in the store but not yet answered', async () => {
    const rt = runtime();
    rt.pendingAcquires = 1;
    await store.acquire({ proxyId: rt.proxyId, model: 'm', strategy: 'least_load' });
    const reconciled = rt.reconcile();
    // The answer arrives and the proxy counts the slot; only then may the rewrite go out.
    await new Promise((r) => setTimeout(r, 60));
    rt.slot('i');
    rt.pendingAcquires = 0;
    await reconciled;
    expect(await inflight()).toBe(1);
  });

  it('releases a slot exactly once, however often its release is called', async () => {
    const rt = runtime();
    await store.acquire({ proxyId: rt.proxyId, model: 'm', strategy: 'least_load' });
    await store.acquire({ proxyId: rt.proxyId, model: 'm', strategy: 'least_load' });
    const release = rt.slot('i');
    rt.slot('i');
    release();
    release();
    await new Promise((r) => setTimeout(r, 50));
    expect(await inflight()).toBe(1);
    expect(rt.counts.total).toBe(1);
  });
});
