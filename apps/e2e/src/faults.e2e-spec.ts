import http from 'node:http';
import OpenAI from 'openai';
import { freePort, RedisServer, sleep, waitFor } from '@switchyard/testing';
import type { InstanceLoadsResponse } from '@switchyard/contracts';
import { AppProcess } from './processes';

jest.setTimeout(120_000);

/** Crash safety with real processes: a killed proxy, a Redis restart, a stopped control plane, a killed instance. */
const TTL_S = 3;
const redis = new RedisServer();
const procs: AppProcess[] = [];
let cp: AppProcess;
let cpPort = 0;
let cpUrl = '';
const sims: AppProcess[] = [];
const proxies: { proc: AppProcess; url: string }[] = [];

const loads = async () => (await (await fetch(`${cpUrl}/debug/instance_loads`)).json()) as InstanceLoadsResponse;
const total = async () => (await loads()).instances.reduce((s, i) => s + i.inflight, 0);

/** Opens a long stream through a proxy and resolves once its first byte arrived; `done` settles with how it ended. */
function openStream(proxyUrl: string, maxTokens = 3000): Promise<{ req: http.ClientRequest; done: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${proxyUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      let body = '';
      const done = new Promise<string>((settle) => {
        res.on('data', (c: Buffer) => (body += c));
        res.on('end', () => settle(body));
        res.on('error', () => settle(body));
        res.on('close', () => settle(body));
      });
      res.once('data', () => resolve({ req, done }));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'sim-llama', messages: [], max_tokens: maxTokens, stream: true }));
  });
}

async function startProxy(name: string): Promise<{ proc: AppProcess; url: string }> {
  const port = await freePort();
  const proc = await new AppProcess('apps/proxy/src/main.ts', { REDIS_URL: redis.url, PROXY_NAME: name, LEASE_TTL_S: '2', RECONCILE_S: '1', REGISTRY_RESYNC_S: '1' }).start(port);
  procs.push(proc);
  return { proc, url: `http://127.0.0.1:${port}` };
}

beforeAll(async () => {
  await redis.start();
  cpPort = await freePort();
  cp = await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: redis.url, INSTANCE_TTL_S: String(TTL_S), LEASE_SWEEP_S: '0.5' }).start(cpPort);
  cpUrl = `http://127.0.0.1:${cpPort}`;
  for (let i = 0; i < 3; i++) {
    const sim = await new AppProcess('apps/sim-instance/src/main.ts', { CONTROL_PLANE_URL: cpUrl, INSTANCE_ID: `f-${i}`, TOKEN_MS: '20', TOKEN_MS_PER_BATCH: '0', MAX_BATCH: '64' }).start(await freePort());
    sims.push(sim);
    procs.push(sim);
  }
  proxies.push(await startProxy('survivor'), await startProxy('victim'));
  expect(await waitFor(async () => (await loads()).instances.length === 3)).toBe(true);
});

afterAll(async () => {
  for (const p of procs.reverse()) await p.stop('SIGKILL');
  await cp.stop();
  await redis.stop();
});

describe('faults', () => {
  it('Redis hung (SIGSTOP) for 2 x LEASE_TTL_S with 20 open streams on two proxies: the shared counts never drop below 20 and no lease is reaped', async () => {
    // Every instance, alive or not: a hung Redis also delays heartbeats, and counts are what is watched here.
    const counted = async () => {
      const r = await fetch(`${cpUrl}/debug/instance_loads?include_dead=true`);
      if (r.status !== 200) return undefined;
      return ((await r.json()) as InstanceLoadsResponse).instances.reduce((s, i) => s + i.inflight, 0);
    };
    const reaped = async () => Number(/^switchyard_leases_reaped_total (\d+)$/m.exec(await (await fetch(`${cpUrl}/metrics`)).text())?.[1]);
    const streams = await Promise.all(proxies.flatMap((p) => Array.from({ length: 10 }, () => openStream(p.url))));
    expect(await waitFor(async () => (await counted()) === 20)).toBe(true);
    const reapedBefore = await reaped();
    const samples: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        // A read that fails while Redis hangs shows no count at all; every count read must be whole.
        const n = await counted().catch(() => undefined);
        if (n !== undefined) samples.push(n);
        await sleep(50);
      }
    })();
    redis.pause();
    await sleep(4000);
    redis.resume();
    // The sweeps queued during the hang run first, then the proxies renew and reconcile.
    await sleep(4000);
    sampling = false;
    await sampler;
    expect(samples.length).toBeGreaterThan(20);
    expect(Math.min(...samples)).toBeGreaterThanOrEqual(20);
    expect(await reaped()).toBe(reapedBefore);
    expect(cp.output).not.toContain('reaped expired proxy leases');
    streams.forEach((s) => s.req.destroy());
    expect(await waitFor(async () => (await counted()) === 0)).toBe(true);
  });

  it('SIGKILL of a proxy holding 20 streams: counts return to the survivor’s true total within the lease window', async () => {
    const [survivor, victim] = proxies;
    const kept = await Promise.all(Array.from({ length: 5 }, () => openStream(survivor.url)));
    const doomed = await Promise.all(Array.from({ length: 20 }, () => openStream(victim.url)));
    expect(await waitFor(async () => (await total()) === 25)).toBe(true);
    victim.proc.signal('SIGKILL');
    await victim.proc.exited();
    // Lease 2 s + a 0.5 s sweep, with slack for a loaded machine.
    expect(await waitFor(async () => (await total()) === 5, 8000)).toBe(true);
    const view = await loads();
    for (const inst of view.instances) expect(Object.keys(inst.inflight_by_proxy).every((p) => p.startsWith('survivor@'))).toBe(true);
    expect(view.instances.reduce((s, i) => s + Object.values(i.inflight_by_proxy).reduce((a, b) => a + b, 0), 0)).toBe(5);
    kept.forEach((k) => k.req.destroy());
    doomed.forEach((k) => k.req.destroy());
    expect(await waitFor(async () => (await total()) === 0)).toBe(true);
  });

  it('Redis restarted without persistence under load: counts are rebuilt from the proxies and match the open requests', async () => {
    const [survivor] = proxies;
    const open = await Promise.all(Array.from({ length: 6 }, () => openStream(survivor.url)));
    expect(await waitFor(async () => (await total()) === 6)).toBe(true);
    await redis.stop();
    // While Redis is away the proxy routes on its snapshot and its own counts, and says so.
    expect(await waitFor(async () => ((await (await fetch(`${survivor.url}/readyz`)).json()) as { degraded: boolean }).degraded === true, 5000)).toBe(true);
    const during = await fetch(`${survivor.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'sim-llama', messages: [], max_tokens: 2 }) });
    expect(during.status).toBe(200);
    await during.text();
    expect(await (await fetch(`${survivor.url}/metrics`)).text()).toMatch(/^switchyard_proxy_degraded 1$/m);
    await redis.start(redis.port);
    // Instances re-register on their next heartbeat; the proxy rewrites its contribution from its local truth.
    expect(await waitFor(async () => (await loads()).instances.length === 3 && (await total()) === 6, 20_000)).toBe(true);
    expect(await waitFor(async () => ((await (await fetch(`${survivor.url}/readyz`)).json()) as { degraded: boolean }).degraded === false)).toBe(true);
    // Serving went on: a new request during the rebuilt state succeeds.
    const client = new OpenAI({ baseURL: `${survivor.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const r = await client.chat.completions.create({ model: 'sim-llama', messages: [], max_tokens: 3 });
    expect(r.choices[0].message.content).toBe('tok tok tok');
    open.forEach((o) => o.req.destroy());
    expect(await waitFor(async () => (await total()) === 0)).toBe(true);
  });

  it('control plane stopped: the proxy keeps serving', async () => {
    const [survivor] = proxies;
    await cp.stop();
    const client = new OpenAI({ baseURL: `${survivor.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    for (let i = 0; i < 5; i++) {
      const r = await client.chat.completions.create({ model: 'sim-llama', messages: [], max_tokens: 2 });
      expect(r.choices[0].message.content).toBe('tok tok');
    }
    cp = await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: redis.url, INSTANCE_TTL_S: String(TTL_S), LEASE_SWEEP_S: '0.5' }).start(cpPort);
  });

  it('an instance killed mid-stream: the client sees an error event, the count is released, the instance is excluded after ttl_s', async () => {
    const [survivor] = proxies;
    // The control plane was just restarted: the instances' ttl may have run out meanwhile; their next heartbeats revive them.
    expect(await waitFor(async () => (await loads()).instances.length === 3)).toBe(true);
    const streams = await Promise.all(Array.from({ length: 3 }, () => openStream(survivor.url)));
    expect(await waitFor(async () => (await total()) === 3)).toBe(true);
    const victim = (await loads()).instances.find((i) => i.inflight > 0)!;
    const index = Number(victim.instance_id.slice(2));
    sims[index].signal('SIGKILL');
    // Each stream on the killed instance ends with an OpenAI-shaped error event.
    const ended: string[] = [];
    for (const s of streams) {
      const b = await Promise.race([s.done, sleep(3000).then(() => '')]);
      if (b.includes('upstream failed mid-stream')) ended.push(b);
    }
    expect(ended.length).toBe(victim.inflight);
    expect(await waitFor(async () => ((await loads()).instances.find((i) => i.instance_id === victim.instance_id)?.inflight ?? 0) === 0)).toBe(true);
    expect(await waitFor(async () => !(await loads()).instances.some((i) => i.instance_id === victim.instance_id), (TTL_S + 2) * 1000)).toBe(true);
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${survivor.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'sim-llama', messages: [], max_tokens: 1 }) });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-switchyard-instance')).not.toBe(victim.instance_id);
      await res.text();
    }
    streams.forEach((s) => s.req.destroy());
    expect(await waitFor(async () => (await total()) === 0)).toBe(true);
  });
});
