import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import type { InstanceView } from '@switchyard/contracts';
import { freePort, RedisServer, sleep, waitFor } from '@switchyard/testing';
import { FakeEngine, startFakeEngine } from './fake-engines';
import { AppProcess } from './processes';

jest.setTimeout(180_000);

/**
 * The control plane is not in the request path, and the registry survives Redis:
 * a Redis restarted empty gets every declared and hand-registered instance back; every
 * control-plane replica stopped for 60 s under steady load fails no request.
 */
const TTL_S = 2;
const PROBE_S = 0.5;
const TOKEN = 'outage-e2e';
const MODEL = 'outage-model';
const redis = new RedisServer();
const cps: AppProcess[] = [];
const proxies: { proc: AppProcess; url: string; client: OpenAI }[] = [];
let declared: FakeEngine;
let registered: FakeEngine;
let cpEnv: Record<string, string>;
let cpPorts: number[] = [];
let cpUrl = '';

async function instances(): Promise<InstanceView[]> {
  const res = await fetch(`${cpUrl}/v1/instances?include_dead=true`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return ((await res.json()) as { instances: InstanceView[] }).instances;
}

async function chat(client: OpenAI): Promise<string | number> {
  try {
    const { response } = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }).withResponse();
    return response.headers.get('x-switchyard-instance') ?? 'no-header';
  } catch (err) {
    return (err as { status?: number }).status ?? -1;
  }
}

/** Closed-loop clients through every proxy in turn until `stop` is set; returns what each request got. */
function steadyLoad(clients: number): { stop: () => Promise<(string | number)[]> } {
  let running = true;
  const results: (string | number)[] = [];
  const loops = Array.from({ length: clients }, async (_, k) => {
    for (let i = k; running; i++) {
      results.push(await chat(proxies[i % proxies.length].client));
      await sleep(50);
    }
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return results;
    },
  };
}

beforeAll(async () => {
  await redis.start();
  declared = await startFakeEngine('vllm', { model: MODEL });
  registered = await startFakeEngine('sglang', { model: MODEL });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sy-outage-'));
  const config = path.join(dir, 'switchyard.yaml');
  writeFileSync(config, `control_plane:\n  probe_interval_s: ${PROBE_S}\ninstances:\n  - url: ${declared.url}\n    id: declared\n    weight: 3\n    max_inflight: 50\n`);
  cpEnv = { REDIS_URL: redis.url, ADMIN_TOKEN: TOKEN, INSTANCE_TTL_S: String(TTL_S), PROBE_TIMEOUT_S: '0.5', SWITCHYARD_CONFIG: config, LEASE_SWEEP_S: '0.5' };
  cpPorts = [await freePort(), await freePort()];
  // Two replicas on one Redis: one leads the probing, the other stands by.
  for (const port of cpPorts) cps.push(await new AppProcess('apps/control-plane/src/main.ts', cpEnv).start(port));
  cpUrl = `http://127.0.0.1:${cpPorts[0]}`;
  for (const name of ['pa', 'pb']) {
    const port = await freePort();
    const proc = await new AppProcess('apps/proxy/src/main.ts', { REDIS_URL: redis.url, PROXY_NAME: name, REGISTRY_RESYNC_S: '0.5', RECONCILE_S: '1', LEASE_TTL_S: '2', FAILURE_COOLDOWN_S: '30' }).start(port);
    proxies.push({ proc, url: `http://127.0.0.1:${port}`, client: new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'unused', maxRetries: 0 }) });
  }
  const reg = await fetch(`${cpUrl}/v1/instances`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ instance_id: 'registered', url: registered.url, models: [MODEL], weight: 2, max_inflight: 40, probe_now: true }),
  });
  expect(reg.status).toBe(200);
  expect(await waitFor(async () => (await instances()).filter((i) => i.is_alive).length === 2, 10_000)).toBe(true);
});

afterAll(async () => {
  for (const p of proxies) await p.proc.stop('SIGKILL');
  for (const c of cps) await c.stop();
  await Promise.all([declared, registered].map((e) => e?.close()));
  await redis.stop();
});

describe('outages', () => {
  it('two replicas: exactly one probes', async () => {
    const leaders = cps.filter((c) => /now probes, sweeps liveness and reaps leases/.test(c.output));
    expect(leaders).toHaveLength(1);
    const probesBefore = declared.probes.health;
    await sleep(4 * PROBE_S * 1000);
    // One replica probing every PROBE_S: about 4 probes (never the 8 of two replicas), with slack for timers.
    expect(declared.probes.health - probesBefore).toBeGreaterThanOrEqual(2);
    expect(declared.probes.health - probesBefore).toBeLessThanOrEqual(6);
  });

  it('Redis restarted empty: declared and hand-registered instances come back with weight and max_inflight; then no request fails', async () => {
    await redis.stop();
    await redis.start(redis.port);
    expect(await waitFor(async () => (await instances().catch(() => [])).length === 2, 5000)).toBe(true);
    const back = Object.fromEntries((await instances()).map((i) => [i.instance_id, i]));
    expect(back.declared).toMatchObject({ url: declared.url, models: [MODEL], weight: 3, max_inflight: 50 });
    expect(back.registered).toMatchObject({ url: registered.url, models: [MODEL], weight: 2, max_inflight: 40 });
    // The log line follows the registrations it reports.
    expect(await waitFor(async () => /the store came back empty: registered 2 known instances again/.test(cps.map((c) => c.output).join('')), 2000)).toBe(true);
    // Proxies reconnect and re-pull; from then on nothing fails.
    expect(await waitFor(async () => typeof (await chat(proxies[0].client)) === 'string' && typeof (await chat(proxies[1].client)) === 'string', 10_000)).toBe(true);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => chat(proxies[i % 2].client)));
    expect(results.filter((r) => typeof r === 'number')).toEqual([]);
  });

  it('every control-plane replica stopped for 60 s under steady load: no request fails; an instance that dies meanwhile is avoided by failover', async () => {
    const load = steadyLoad(4);
    await sleep(1000);
    for (const c of cps) await c.stop('SIGKILL');
    // Well past the ttl: liveness is no longer refreshed by anyone.
    await sleep(3 * TTL_S * 1000);
    for (const p of proxies) {
      const ready = await fetch(`${p.url}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ control_plane: 'unreachable' });
    }
    const metrics = await (await fetch(`${proxies[0].url}/metrics`)).text();
    expect(metrics).toMatch(/^switchyard_proxy_control_plane_reachable 0$/m);
    await sleep(20_000);
    // An engine dies while nobody probes: the proxies' own failover routes around it.
    await registered.close();
    await sleep(60_000 - 20_000 - 3 * TTL_S * 1000);
    const results = await load.stop();
    expect(results.length).toBeGreaterThan(200);
    expect(results.filter((r) => typeof r === 'number')).toEqual([]);
    expect(results.slice(-50).every((r) => r === 'declared')).toBe(true);

    // A replica back: liveness is refreshed again, and the dead engine goes.
    cps.push(await new AppProcess('apps/control-plane/src/main.ts', cpEnv).start(cpPorts[0]));
    expect(await waitFor(async () => (await instances()).find((i) => i.instance_id === 'registered')?.is_alive === false, 10_000)).toBe(true);
    expect(await waitFor(async () => ((await (await fetch(`${proxies[0].url}/readyz`)).json()) as { control_plane: string }).control_plane === 'ok', 10_000)).toBe(true);
  });
});
