import http from 'node:http';
import OpenAI from 'openai';
import { freePort, RedisServer, waitFor } from '@switchyard/testing';
import { AppProcess } from './processes';

jest.setTimeout(90_000);

const redis = new RedisServer();
const procs: AppProcess[] = [];
let cpUrl = '';
const proxyUrls: string[] = [];
const simPorts: number[] = [];

type Inst = { instance_id: string; load: { inflight: number } };
const instances = async (): Promise<Inst[]> => ((await (await fetch(`${cpUrl}/v1/instances`)).json()) as { instances: Inst[] }).instances;
const totalInflight = async () => (await instances()).reduce((s, i) => s + i.load.inflight, 0);

beforeAll(async () => {
  await redis.start();
  const cpPort = await freePort();
  procs.push(await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: redis.url }).start(cpPort));
  cpUrl = `http://127.0.0.1:${cpPort}`;
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    simPorts.push(port);
    procs.push(await new AppProcess('apps/sim-instance/src/main.ts', { CONTROL_PLANE_URL: cpUrl, INSTANCE_ID: `sim-${i}`, TOKEN_MS: '3', TTFT_BASE_MS: '5' }).start(port));
  }
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    procs.push(await new AppProcess('apps/proxy/src/main.ts', { REDIS_URL: redis.url, PROXY_NAME: `p${i}` }).start(port));
    proxyUrls.push(`http://127.0.0.1:${port}`);
  }
  expect(await waitFor(async () => (await instances()).length === 3)).toBe(true);
});

afterAll(async () => {
  for (const p of procs.reverse()) await p.stop();
  await redis.stop();
});

const clientFor = (i: number) => new OpenAI({ baseURL: `${proxyUrls[i]}/v1`, apiKey: 'unused', maxRetries: 0 });

describe('proxy with two proxies, three sim instances, one Redis', () => {
  it('serves streaming and non-streaming requests correctly and ends with every count at 0', async () => {
    const jobs = Array.from({ length: 24 }, async (_, i) => {
      const client = clientFor(i % 2);
      if (i % 3 === 0) {
        const r = await client.chat.completions.create({ model: 'sim-llama', messages: [{ role: 'user', content: `q${i}` }], max_tokens: 5 });
        expect(r.choices[0].message.content).toBe('tok tok tok tok tok');
      } else {
        const stream = await client.chat.completions.create({ model: 'sim-llama', messages: [{ role: 'user', content: `q${i}` }], max_tokens: 8, stream: true });
        let text = '';
        for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
        expect(text).toBe('tok' + ' tok'.repeat(7));
      }
    });
    await Promise.all(jobs);
    expect(await waitFor(async () => (await totalInflight()) === 0)).toBe(true);
    for (const inst of await instances()) expect(inst.load.inflight).toBe(0);
  });

  it('names the chosen instance and holds its count for the whole streamed body', async () => {
    const res = await fetch(`${proxyUrls[0]}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-llama', messages: [], max_tokens: 60, stream: true }),
    });
    const chosen = res.headers.get('x-switchyard-instance');
    expect(chosen).toMatch(/^sim-/);
    expect(res.headers.get('x-request-id')).toBeTruthy();
    const reader = res.body!.getReader();
    await reader.read();
    // Headers are long gone; the body is still streaming, so the slot is still held.
    expect((await instances()).find((i) => i.instance_id === chosen)?.load.inflight).toBe(1);
    while (!(await reader.read()).done);
    expect(await waitFor(async () => (await totalInflight()) === 0)).toBe(true);
  });

  it('releases the count at once when the client disconnects mid-stream, and the instance sees the cancel', async () => {
    const disconnects = async () => {
      let n = 0;
      for (const p of simPorts) n += ((await (await fetch(`http://127.0.0.1:${p}/sim/stats`)).json()) as { disconnects: number }).disconnects;
      return n;
    };
    const before = await disconnects();
    await new Promise<void>((resolve) => {
      const req = http.request(`${proxyUrls[1]}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.end(JSON.stringify({ model: 'sim-llama', messages: [], max_tokens: 2000, stream: true }));
    });
    expect(await waitFor(async () => (await totalInflight()) === 0, 2000)).toBe(true);
    expect(await waitFor(async () => (await disconnects()) === before + 1, 2000)).toBe(true);
  });

  it('answers OpenAI-style errors: unknown model 404, malformed JSON 400, no route 404', async () => {
    const post = (body: string) => fetch(`${proxyUrls[0]}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const unknown = await post(JSON.stringify({ model: 'nope', messages: [] }));
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('model_not_found');
    const bad = await post('{oops');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/JSON/);
    expect((await fetch(`${proxyUrls[0]}/v2/whatever`)).status).toBe(404);
    expect(await totalInflight()).toBe(0);
  });

  it('stops at start on an unknown strategy, listing the valid names', async () => {
    const bad = new AppProcess('apps/proxy/src/main.ts', { ROUTING_STRATEGY: 'fastest' });
    expect(await bad.runToExit()).not.toBe(0);
    expect(bad.output).toMatch(/ROUTING_STRATEGY.*least_load.*round_robin/);
  });
});
