import http from 'node:http';
import OpenAI from 'openai';
import { freePort, RedisServer, sleep, waitFor } from '@switchyard/testing';
import { AppProcess } from './processes';

jest.setTimeout(120_000);

const redis = new RedisServer();
const procs: AppProcess[] = [];
let cpUrl = '';
const simUrls: string[] = [];

type Inst = { instance_id: string; load: { inflight: number } };
const totalInflight = async () =>
  (((await (await fetch(`${cpUrl}/v1/instances`)).json()) as { instances: Inst[] }).instances).reduce((s, i) => s + i.load.inflight, 0);

async function proxy(name: string, env: Record<string, string> = {}): Promise<{ proc: AppProcess; url: string; client: OpenAI }> {
  const port = await freePort();
  const proc = await new AppProcess('apps/proxy/src/main.ts', { REDIS_URL: redis.url, PROXY_NAME: name, ...env }).start(port);
  procs.push(proc);
  const url = `http://127.0.0.1:${port}`;
  return { proc, url, client: new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 }) };
}

async function streamText(client: OpenAI, maxTokens: number): Promise<string> {
  const stream = await client.chat.completions.create({ model: 'sim-llama', messages: [], max_tokens: maxTokens, stream: true });
  let text = '';
  for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
  return text;
}
const expected = (n: number) => 'tok' + ' tok'.repeat(n - 1);

beforeAll(async () => {
  await redis.start();
  const cpPort = await freePort();
  procs.push(await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: redis.url, INSTANCE_TTL_S: '120' }).start(cpPort));
  cpUrl = `http://127.0.0.1:${cpPort}`;
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    // No CONTROL_PLANE_URL: the test registers them itself, with max_inflight.
    procs.push(await new AppProcess('apps/sim-instance/src/main.ts', { TOKEN_MS: '10', TOKEN_MS_PER_BATCH: '0', TTFT_BASE_MS: '5' }).start(port));
    simUrls.push(`http://127.0.0.1:${port}`);
    const res = await fetch(`${cpUrl}/v1/instances`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ instance_id: `q-${i}`, url: simUrls[i], models: ['sim-llama'], max_inflight: 2 }) });
    expect(res.ok).toBe(true);
  }
});

afterAll(async () => {
  for (const p of procs.reverse()) await p.stop();
  await redis.stop();
});

describe('admission queue', () => {
  it('with max_inflight 2 on each of two instances, 10 concurrent requests over two proxies: 4 run, 6 wait, all succeed, never more than 2 on one', async () => {
    const a = await proxy('qa');
    const b = await proxy('qb');
    let maxRunning = 0;
    let maxQueued = 0;
    let sampling = true;
    const queuedOf = async (url: string) => {
      const m = /switchyard_proxy_queue_depth\{model="sim-llama"\} (\d+)/.exec(await (await fetch(`${url}/metrics`)).text());
      return m ? Number(m[1]) : 0;
    };
    const sampler = (async () => {
      while (sampling) {
        // Everything an instance holds: decoding plus its own queue.
        const running = await Promise.all(
          simUrls.map(async (u) => {
            const st = (await (await fetch(`${u}/sim/stats`)).json()) as { running: number; queued: number };
            return st.running + st.queued;
          }),
        );
        maxRunning = Math.max(maxRunning, ...running);
        maxQueued = Math.max(maxQueued, (await queuedOf(a.url)) + (await queuedOf(b.url)));
        await sleep(5);
      }
    })();
    // Long enough that all 10 have arrived well before the first finishes.
    const texts = await Promise.all(Array.from({ length: 10 }, (_, i) => streamText((i % 2 ? a : b).client, 80)));
    sampling = false;
    await sampler;
    expect(texts).toEqual(Array(10).fill(expected(80)));
    expect(maxRunning).toBe(2);
    expect(maxQueued).toBe(6);
    expect(await waitFor(async () => (await totalInflight()) === 0)).toBe(true);
  });

  it('answers 429 when the queue is full and 503 when a wait times out, both with Retry-After', async () => {
    const p = await proxy('qsmall', { QUEUE_MAX: '1', QUEUE_TIMEOUT_S: '0.5' });
    const holders = Array.from({ length: 4 }, () => streamText(p.client, 150));
    expect(await waitFor(async () => (await totalInflight()) === 4)).toBe(true);
    const post = () => fetch(`${p.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'sim-llama', messages: [] }) });
    // A client that leaves while queued leaves the queue.
    const leaver = new AbortController();
    const left = fetch(`${p.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'sim-llama', messages: [] }), signal: leaver.signal }).catch((err: Error) => err.name);
    expect(await waitFor(async () => /switchyard_proxy_queue_depth\{model="sim-llama"\} 1/.test(await (await fetch(`${p.url}/metrics`)).text()))).toBe(true);
    leaver.abort();
    expect(await left).toBe('AbortError');
    expect(await waitFor(async () => !/switchyard_proxy_queue_depth\{model="sim-llama"\}/.test(await (await fetch(`${p.url}/metrics`)).text()))).toBe(true);
    const queued = post();
    expect(await waitFor(async () => /switchyard_proxy_queue_depth\{model="sim-llama"\} 1/.test(await (await fetch(`${p.url}/metrics`)).text()))).toBe(true);
    const full = await post();
    expect(full.status).toBe(429);
    expect(full.headers.get('retry-after')).toBe('1');
    expect(((await full.json()) as { error: { code: string } }).error.code).toBe('queue_full');
    const timedOut = await queued;
    expect(timedOut.status).toBe(503);
    expect(timedOut.headers.get('retry-after')).toBe('1');
    expect(((await timedOut.json()) as { error: { code: string } }).error.code).toBe('queue_timeout');
    expect(await Promise.all(holders)).toEqual(Array(4).fill(expected(150)));
    expect(await waitFor(async () => (await totalInflight()) === 0)).toBe(true);
  });
});

describe('drain on SIGTERM', () => {
  it('completes 10 open streams intact, refuses new work after the settle window, exits 0, and leaves every count at 0', async () => {
    // Capacity for the 10 streams: lift max_inflight for this case.
    for (let i = 0; i < 2; i++) {
      await fetch(`${cpUrl}/v1/instances`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ instance_id: `q-${i}`, url: simUrls[i], models: ['sim-llama'] }) });
    }
    const p = await proxy('drainer', { DRAIN_SETTLE_S: '1', DRAIN_TIMEOUT_S: '30' });
    const streams = Array.from({ length: 10 }, () => streamText(p.client, 200));
    expect(await waitFor(async () => (await totalInflight()) === 10)).toBe(true);
    const exited = p.proc.exited();
    p.proc.signal('SIGTERM');
    expect(await waitFor(async () => (await fetch(`${p.url}/readyz`)).status === 503, 2000)).toBe(true);
    expect(await (await fetch(`${p.url}/readyz`)).json()).toMatchObject({ status: 'draining' });
    expect((await fetch(`${p.url}/healthz`)).status).toBe(200);
    // The lease says so, and the control plane's debug view shows it.
    expect(
      await waitFor(async () => {
        const view = (await (await fetch(`${cpUrl}/debug/instance_loads`)).json()) as { proxies: { proxy_id: string; draining: boolean }[] };
        return view.proxies.some((x) => x.proxy_id.startsWith('drainer@') && x.draining);
      }, 2000),
    ).toBe(true);
    await sleep(1500);
    // Past the settle window: a new connection is refused, or a kept-alive one is answered 503 and closed.
    const late = await new Promise<number | string>((resolve) => {
      const req = http.request(`${p.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
      req.end(JSON.stringify({ model: 'sim-llama', messages: [] }));
    });
    expect([503, 'ECONNREFUSED']).toContain(late);
    expect(await Promise.all(streams)).toEqual(Array(10).fill(expected(200)));
    expect(await exited).toBe(0);
    expect(await waitFor(async () => (await totalInflight()) === 0)).toBe(true);
  });

  it('with DRAIN_TIMEOUT_S=2 ends longer streams with an error event, releases their counts and exits 0', async () => {
    const p = await proxy('hurried', { DRAIN_SETTLE_S: '0', DRAIN_TIMEOUT_S: '2' });
    const outcomes = Array.from({ length: 4 }, () => streamText(p.client, 2000).then(() => 'completed', (err: Error) => err.message));
    expect(await waitFor(async () => (await totalInflight()) === 4)).toBe(true);
    const exited = p.proc.exited();
    p.proc.signal('SIGTERM');
    const results = await Promise.all(outcomes);
    for (const r of results) expect(r).toMatch(/upstream failed mid-stream: the proxy is shutting down/);
    expect(await exited).toBe(0);
    expect(await waitFor(async () => (await totalInflight()) === 0)).toBe(true);
  });
});
