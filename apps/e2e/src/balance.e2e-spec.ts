import OpenAI from 'openai';
import { freePort, RedisServer } from '@switchyard/testing';
import { AppProcess } from './processes';

jest.setTimeout(120_000);

/**
 * A functional test of balance, not of speed: closed-loop clients with uneven
 * output lengths through two proxies. With shared atomic least_load, whenever
 * every client holds a request (nothing between a release and the next acquire),
 * the instances' counts are within 1 of each other; round_robin drifts apart.
 */
const CLIENTS = 9;
const redis = new RedisServer();
const procs: AppProcess[] = [];
let cpUrl = '';

type Inst = { instance_id: string; load: { inflight: number } };
const counts = async (): Promise<number[]> =>
  (((await (await fetch(`${cpUrl}/v1/instances`)).json()) as { instances: Inst[] }).instances).map((i) => i.load.inflight);

async function startProxies(strategy: string): Promise<OpenAI[]> {
  const clients: OpenAI[] = [];
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    procs.push(await new AppProcess('apps/proxy/src/main.ts', { REDIS_URL: redis.url, PROXY_NAME: `${strategy}-${i}`, ROUTING_STRATEGY: strategy }).start(port));
    clients.push(new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'unused', maxRetries: 0 }));
  }
  return clients;
}

/** Runs the closed loop for `ms` and returns the spreads of the samples taken while every client held a request. */
async function run(clients: OpenAI[], ms: number): Promise<number[]> {
  let stop = false;
  let seed = 7;
  // Deterministic uneven lengths: most requests short, one in four 20 times longer.
  const nextLength = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % 4 === 0 ? 40 : 2);
  const loops = Array.from({ length: CLIENTS }, async (_, c) => {
    while (!stop) {
      const stream = await clients[c % clients.length].chat.completions.create({ model: 'sim-llama', messages: [], max_tokens: nextLength(), stream: true });
      for await (const _chunk of stream);
    }
  });
  const spreads: number[] = [];
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const n = await counts();
    if (n.reduce((a, b) => a + b, 0) === CLIENTS) spreads.push(Math.max(...n) - Math.min(...n));
  }
  stop = true;
  await Promise.all(loops);
  return spreads;
}

beforeAll(async () => {
  await redis.start();
  const cpPort = await freePort();
  procs.push(await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: redis.url }).start(cpPort));
  cpUrl = `http://127.0.0.1:${cpPort}`;
  for (let i = 0; i < 3; i++) {
    procs.push(await new AppProcess('apps/sim-instance/src/main.ts', { CONTROL_PLANE_URL: cpUrl, INSTANCE_ID: `bal-${i}`, TOKEN_MS: '4', TOKEN_MS_PER_BATCH: '0', TTFT_BASE_MS: '2' }).start(await freePort()));
  }
});

afterAll(async () => {
  for (const p of procs.reverse()) await p.stop();
  await redis.stop();
});

describe('balance across two proxies with uneven request lengths', () => {
  it('least_load keeps in-flight counts within 1 at every steady sample; round_robin does not', async () => {
    const ll = await startProxies('least_load');
    await run(ll, 500); // warm-up: connections and script caches
    const llSpreads = await run(ll, 4000);
    expect(llSpreads.length).toBeGreaterThan(20);
    expect(Math.max(...llSpreads)).toBeLessThanOrEqual(1);
    expect((await counts()).every((n) => n === 0)).toBe(true);

    const rr = await startProxies('round_robin');
    const rrSpreads = await run(rr, 4000);
    expect(rrSpreads.length).toBeGreaterThan(20);
    expect(Math.max(...rrSpreads)).toBeGreaterThanOrEqual(2);
  });
});
