import OpenAI from 'openai';
import { freePort, RedisServer } from '@switchyard/testing';
import { AppProcess } from './processes';

jest.setTimeout(60_000);

const redis = new RedisServer();
let cp: AppProcess;
let sim: AppProcess;
let cpUrl = '';
let simPort = 0;

beforeAll(async () => {
  await redis.start();
  const cpPort = await freePort();
  cp = await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: redis.url, INSTANCE_TTL_S: '3' }).start(cpPort);
  cpUrl = `http://127.0.0.1:${cpPort}`;
  simPort = await freePort();
  sim = await new AppProcess('apps/sim-instance/src/main.ts', { CONTROL_PLANE_URL: cpUrl, INSTANCE_ID: 'sim-a', TOKEN_MS: '2' }).start(simPort);
});

afterAll(async () => {
  await sim?.stop();
  await cp?.stop();
  await redis.stop();
});

it('a sim instance process registers itself, serves the openai client and heartbeats its own metrics', async () => {
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${simPort}/v1`, apiKey: 'unused', maxRetries: 0 });
  const r = await client.chat.completions.create({ model: 'sim-llama', messages: [{ role: 'user', content: 'hello' }], max_tokens: 2 });
  expect(r.choices[0].message.content).toBe('tok tok');
  let inst: { is_alive: boolean; load: { inflight: number; qps_1m: number | null; gpu_util: number | null } } | undefined;
  const deadline = Date.now() + 5000;
  do {
    await new Promise((res) => setTimeout(res, 200));
    inst = (await (await fetch(`${cpUrl}/v1/instances/sim-a`)).json()) as typeof inst;
  } while ((inst?.load.qps_1m ?? 0) === 0 && Date.now() < deadline);
  expect(inst).toMatchObject({ is_alive: true, url: `http://127.0.0.1:${simPort}`, models: ['sim-llama'] });
  expect(inst?.load.inflight).toBe(0);
  expect(inst?.load.qps_1m).toBeGreaterThan(0);
  expect(inst?.load.gpu_util).toBe(0);
});
