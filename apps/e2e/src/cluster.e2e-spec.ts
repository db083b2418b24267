import OpenAI from 'openai';
import type { InstanceLoadsResponse } from '@switchyard/contracts';
import { freePort, RedisCluster, waitFor } from '@switchyard/testing';
import { FakeEngine, startFakeEngine } from './fake-engines';
import { AppProcess } from './processes';

jest.setTimeout(120_000);

/**
 * REDIS_CLUSTER=true with real processes: a control plane and a proxy on a three-master Redis
 * Cluster, three routing pools whose keys live on three different masters, engines probed and
 * requests routed in every pool, and a model refused in a second pool (409).
 */
const cluster = new RedisCluster(3);
const TOKEN = 'cluster-e2e';
const engines: FakeEngine[] = [];
const pools: string[] = [];
let cp: AppProcess;
let proxy: AppProcess;
let cpUrl = '';
let client: OpenAI;

async function register(body: Record<string, unknown>) {
  const res = await fetch(`${cpUrl}/v1/instances`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as { error?: { message: string; code: string } } };
}

async function loads(): Promise<InstanceLoadsResponse> {
  return (await (await fetch(`${cpUrl}/debug/instance_loads`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as InstanceLoadsResponse;
}

beforeAll(async () => {
  await cluster.start();
  // Pool names whose hash slots fall on three different masters.
  const masters = new Set<number>();
  for (let i = 0; pools.length < 3 && i < 1000; i++) {
    const node = cluster.nodeOf(`sy:{pool-${i}}:rec`);
    if (!masters.has(node)) {
      masters.add(node);
      pools.push(`pool-${i}`);
    }
  }
  const env = { REDIS_URL: cluster.url, REDIS_CLUSTER: 'true' };
  const cpPort = await freePort();
  cp = await new AppProcess('apps/control-plane/src/main.ts', { ...env, ADMIN_TOKEN: TOKEN, PROBE_INTERVAL_S: '0.5', INSTANCE_TTL_S: '5', LEASE_SWEEP_S: '0.5' }).start(cpPort);
  cpUrl = `http://127.0.0.1:${cpPort}`;
  const proxyPort = await freePort();
  proxy = await new AppProcess('apps/proxy/src/main.ts', { ...env, REGISTRY_RESYNC_S: '0.5', MAX_RETRIES: '0' }).start(proxyPort);
  client = new OpenAI({ baseURL: `http://127.0.0.1:${proxyPort}/v1`, apiKey: 'unused', maxRetries: 0 });
});

afterAll(async () => {
  await proxy?.stop();
  await cp?.stop();
  await Promise.all(engines.map((e) => e.close()));
  await cluster.stop();
});

describe('REDIS_CLUSTER=true', () => {
  it('registers an engine per pool on its own master, probes it there, and routes each model to its pool', async () => {
    for (const [i, pool] of pools.entries()) {
      const e = await startFakeEngine('vllm', { model: `model-${i}` });
      Object.assign(e, { waiting: i + 1 });
      engines.push(e);
      expect((await register({ instance_id: `e${i}`, url: e.url, models: [`model-${i}`], pool, probe_now: true })).status).toBe(200);
    }
    // Each pool's registry is on a different master.
    expect(new Set(pools.map((p) => cluster.nodeOf(`sy:{${p}}:rec`))).size).toBe(3);
    // The leader probes every pool: each engine's signals arrive.
    expect(await waitFor(async () => (await loads()).instances.every((i) => i.engine.engine === 'vllm'), 10_000)).toBe(true);
    expect(Object.fromEntries((await loads()).instances.map((i) => [i.instance_id, i.engine.waiting]))).toEqual({ e0: 1, e1: 2, e2: 3 });
    for (const [i] of pools.entries()) {
      const { response } = await client.chat.completions.create({ model: `model-${i}`, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }).withResponse();
      expect(response.headers.get('x-switchyard-instance')).toBe(`e${i}`);
    }
    expect(engines.map((e) => e.received)).toEqual([1, 1, 1]);
    expect(await waitFor(async () => (await loads()).instances.every((i) => i.inflight === 0))).toBe(true);
  });

  it('refuses a model in a second pool with 409 naming both, and writes nothing', async () => {
    const r = await register({ instance_id: 'stray', url: engines[0].url, models: ['model-0'], pool: pools[1] });
    expect(r.status).toBe(409);
    expect(r.body.error).toMatchObject({ code: 'pool_conflict', message: expect.stringContaining(`'${pools[0]}'`) });
    expect(r.body.error?.message).toContain(`'${pools[1]}'`);
    expect((await loads()).instances.map((i) => i.instance_id).sort()).toEqual(['e0', 'e1', 'e2']);
  });
});
