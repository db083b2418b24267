import OpenAI from 'openai';
import type { InstanceLoadsResponse, InstanceLoadView } from '@switchyard/contracts';
import { freePort, RedisServer, sleep, waitFor } from '@switchyard/testing';
import { FakeEngine, FakeEngineKind, startFakeEngine } from './fake-engines';
import { AppProcess } from './processes';

jest.setTimeout(120_000);

/**
 * Real engines behind Switchyard: engines that never heartbeat, registered over the admin
 * API, kept alive by the control plane's probes, their /metrics read into engine signals,
 * taken out when /health fails and back when it recovers; the tie-breaker and the KV guard.
 */
const TTL_S = 3;
const PROBE_S = 0.5;
const TOKEN = 'engines-e2e';
const redis = new RedisServer();
const engines: FakeEngine[] = [];
let cp: AppProcess;
let proxy: AppProcess;
let cpUrl = '';
let client: OpenAI;

async function admin(method: string, path: string, body?: unknown) {
  const res = await fetch(cpUrl + path, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function view(id: string): Promise<InstanceLoadView | undefined> {
  const res = await fetch(`${cpUrl}/debug/instance_loads?include_dead=true`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return ((await res.json()) as InstanceLoadsResponse).instances.find((i) => i.instance_id === id);
}

/** One chat completion through the proxy: the instance that served it, or the HTTP status it failed with. */
async function chat(model: string): Promise<string | number> {
  try {
    const { response } = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }).withResponse();
    return response.headers.get('x-switchyard-instance') ?? 'no-header';
  } catch (err) {
    return (err as { status?: number }).status ?? -1;
  }
}

async function engine(kind: FakeEngineKind, model: string): Promise<FakeEngine> {
  const e = await startFakeEngine(kind, { model });
  engines.push(e);
  return e;
}

beforeAll(async () => {
  await redis.start();
  const cpPort = await freePort();
  cp = await new AppProcess('apps/control-plane/src/main.ts', {
    REDIS_URL: redis.url,
    ADMIN_TOKEN: TOKEN,
    INSTANCE_TTL_S: String(TTL_S),
    PROBE_INTERVAL_S: String(PROBE_S),
    PROBE_TIMEOUT_S: '0.5',
  }).start(cpPort);
  cpUrl = `http://127.0.0.1:${cpPort}`;
  const proxyPort = await freePort();
  proxy = await new AppProcess('apps/proxy/src/main.ts', { REDIS_URL: redis.url, REGISTRY_RESYNC_S: '0.5', MAX_RETRIES: '0', QUEUE_MAX: '0' }).start(proxyPort);
  client = new OpenAI({ baseURL: `http://127.0.0.1:${proxyPort}/v1`, apiKey: 'unused', maxRetries: 0 });
});

afterAll(async () => {
  await proxy?.stop();
  await cp?.stop();
  await Promise.all(engines.map((e) => e.close()));
  await redis.stop();
});

const KINDS: FakeEngineKind[] = ['vllm', 'sglang', 'llamacpp'];

describe('engines that never heartbeat, kept alive by probes', () => {
  const byKind = new Map<FakeEngineKind, FakeEngine>();

  it('registers each after a probe, reads its engine signals, and keeps it routable for 3 × INSTANCE_TTL_S', async () => {
    for (const kind of KINDS) {
      const e = await engine(kind, `${kind}-model`);
      Object.assign(e, { running: 2, waiting: 3, kv: 0.42 });
      byKind.set(kind, e);
      const r = await admin('POST', '/v1/instances', { instance_id: kind, url: e.url, models: [`${kind}-model`], probe_now: true });
      expect(r.status).toBe(200);
    }
    for (const kind of KINDS) {
      expect(await waitFor(async () => (await view(kind))?.engine.scraped_at != null, 4 * PROBE_S * 1000 + 2000)).toBe(true);
      expect((await view(kind))?.engine).toMatchObject({ engine: kind, running: 2, waiting: 3, kv_cache_usage: 0.42, scrape_error: null });
    }
    // Three ttls with no heartbeat at all: every request still lands.
    const until = Date.now() + 3 * TTL_S * 1000;
    const served: (string | number)[] = [];
    while (Date.now() < until) {
      served.push(...(await Promise.all(KINDS.map((k) => chat(`${k}-model`)))));
      await sleep(250);
    }
    expect(served.length).toBeGreaterThan(3 * KINDS.length);
    expect(served.filter((s) => typeof s === 'number')).toEqual([]);
    for (const kind of KINDS) expect((await view(kind))?.is_alive).toBe(true);
  });

  it.each(KINDS)('%s: a failing /health takes it out before its ttl, and recovery brings it back', async (kind) => {
    const e = byKind.get(kind) as FakeEngine;
    const before = cp.output.length;
    e.healthy = false;
    expect(await waitFor(async () => (await view(kind))?.is_alive === false, 10_000)).toBe(true);
    // Taken out by failed probes, not by the ttl (the log line may land just after the store changed).
    expect(await waitFor(() => new RegExp(`instance ${kind} not alive \\(probes failed`).test(cp.output.slice(before)), 2000)).toBe(true);
    await sleep(300);
    const received = e.received;
    expect(await chat(`${kind}-model`)).toBe(503);
    expect(e.received).toBe(received);

    e.healthy = true;
    expect(await waitFor(async () => (await view(kind))?.is_alive === true, 10_000)).toBe(true);
    expect(await waitFor(() => new RegExp(`instance ${kind} alive \\(probe recovered`).test(cp.output.slice(before)), 2000)).toBe(true);
    expect(await waitFor(async () => (await chat(`${kind}-model`)) === kind, 5000)).toBe(true);
  });

  it('registration with probe_now refuses an unreachable URL and a model the engine does not list (422)', async () => {
    const down = await admin('POST', '/v1/instances', { instance_id: 'nowhere', url: `http://127.0.0.1:${await freePort()}`, models: ['m'], probe_now: true });
    expect(down.status).toBe(422);
    expect(down.body).toMatchObject({ error: { code: 'probe_failed', param: 'url', message: expect.stringMatching(/cannot be reached: GET \/health: .*ECONNREFUSED/) } });
    const e = byKind.get('vllm') as FakeEngine;
    const wrong = await admin('POST', '/v1/instances', { instance_id: 'wrong-model', url: e.url, models: ['vllm-model', 'not-served'], probe_now: true });
    expect(wrong.status).toBe(422);
    expect(wrong.body).toMatchObject({ error: { param: 'models', message: expect.stringMatching(/not-served not listed by .*\/v1\/models \(it lists: vllm-model\)/) } });
    for (const id of ['nowhere', 'wrong-model']) expect((await admin('GET', `/v1/instances/${id}`)).status).toBe(404);
  });
});

describe('engine signals in selection', () => {
  it('with equal in-flight the instance with fewer waiting is chosen; one over KV_CACHE_GUARD is skipped while another has room', async () => {
    const a = await engine('vllm', 'tie-model');
    const b = await engine('vllm', 'tie-model');
    const signals = async (id: string, waiting: number, kv: number) => (await view(id))?.engine.waiting === waiting && (await view(id))?.engine.kv_cache_usage === kv;
    const set = async (wa: number, ka: number, wb: number, kb: number) => {
      Object.assign(a, { running: 0, waiting: wa, kv: ka });
      Object.assign(b, { running: 0, waiting: wb, kv: kb });
      expect(await waitFor(async () => (await signals('tie-a', wa, ka)) && (await signals('tie-b', wb, kb)), 10_000)).toBe(true);
      // The proxy reads the store's selection: nothing cached to wait for.
    };
    for (const [id, e] of [['tie-a', a], ['tie-b', b]] as const) {
      expect((await admin('POST', '/v1/instances', { instance_id: id, url: e.url, models: ['tie-model'] })).status).toBe(200);
    }
    const tenPicks = async () => {
      const out: (string | number)[] = [];
      for (let i = 0; i < 10; i++) out.push(await chat('tie-model'));
      return out;
    };

    await set(5, 0.1, 0, 0.1);
    expect(await tenPicks()).toEqual(Array(10).fill('tie-b'));
    await set(0, 0.1, 5, 0.1);
    expect(await tenPicks()).toEqual(Array(10).fill('tie-a'));
    // Fewer waiting, but its KV cache is over the guard (0.97): the other one serves.
    await set(0, 0.99, 5, 0.5);
    expect(await tenPicks()).toEqual(Array(10).fill('tie-b'));
    // Every candidate over the guard: still served, by the usual order.
    await set(0, 0.99, 5, 0.98);
    expect(await tenPicks()).toEqual(Array(10).fill('tie-a'));
  });
});
