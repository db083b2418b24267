import http from 'node:http';
import { freePort, RedisServer, waitFor } from '@switchyard/testing';
import { AppProcess } from './processes';

jest.setTimeout(120_000);

const redis = new RedisServer();
const procs: AppProcess[] = [];
let cpUrl = '';

type Status = { proxies: { alive: number; draining: number } };
const status = async () => (await (await fetch(`${cpUrl}/debug/status`)).json()) as Status;

/** A GET on a fresh connection each time, so node:cluster may hand it to any worker. */
function getFresh(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false, headers: { connection: 'close' } }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

beforeAll(async () => {
  await redis.start();
  const cpPort = await freePort();
  procs.push(await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: redis.url }).start(cpPort));
  cpUrl = `http://127.0.0.1:${cpPort}`;
  const simPort = await freePort();
  procs.push(await new AppProcess('apps/sim-instance/src/main.ts', { CONTROL_PLANE_URL: cpUrl, INSTANCE_ID: 'sim-w', TOKEN_MS: '2', TTFT_BASE_MS: '2' }).start(simPort));
});

afterAll(async () => {
  for (const p of procs.reverse()) await p.stop();
  await redis.stop();
});

describe('WORKERS=2', () => {
  it('two workers on one port, each its own proxy id and lease, /metrics naming the one that answered; SIGTERM drains both and exits 0', async () => {
    const port = await freePort();
    const proxy = await new AppProcess('apps/proxy/src/main.ts', { REDIS_URL: redis.url, PROXY_NAME: 'wk', WORKERS: '2', DRAIN_SETTLE_S: '1' }).start(port);
    procs.push(proxy);
    const base = `http://127.0.0.1:${port}`;
    expect(await waitFor(async () => (await status()).proxies.alive === 2, 30_000)).toBe(true);
    // Both workers must be listening before the round-robin hand-out can reach both.
    expect(await waitFor(() => (proxy.output.match(/proxy wk-w\d@\S+ listening on/g) ?? []).length === 2, 30_000)).toBe(true);
    const answered = new Set<string>();
    for (let i = 0; i < 20 && answered.size < 2; i++) {
      const m = /^switchyard_proxy_info\{proxy_id="([^"]+)",worker="(\d+)"\} 1$/m.exec((await getFresh(`${base}/metrics`)).body);
      expect(m).not.toBeNull();
      answered.add(`${m![1]} ${m![2]}`);
    }
    expect([...answered].sort()).toEqual([expect.stringMatching(/^wk-w1@\S+ 1$/), expect.stringMatching(/^wk-w2@\S+ 2$/)]);
    const res = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'sim-llama', messages: [], max_tokens: 3 }) });
    expect(res.status).toBe(200);

    const exited = proxy.exited();
    proxy.signal('SIGTERM');
    expect(await waitFor(async () => (await status()).proxies.draining === 2, 5000)).toBe(true);
    expect(await exited).toBe(0);
    expect((await status()).proxies.alive).toBe(0);
  });
});
