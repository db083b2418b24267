import net from 'node:net';
import { freePort, RedisServer, sleep, waitFor } from '@switchyard/testing';
import { AppProcess } from './processes';

jest.setTimeout(90_000);

const redis = new RedisServer();
const procs: AppProcess[] = [];
let cpUrl = '';
let proxyPort = 0;
let proxy: AppProcess;
const simUrls: string[] = [];

type Inst = { instance_id: string; load: { inflight: number } };
const instances = async (): Promise<Inst[]> => ((await (await fetch(`${cpUrl}/v1/instances`)).json()) as { instances: Inst[] }).instances;
const totalInflight = async () => (await instances()).reduce((s, i) => s + i.load.inflight, 0);
/** Open exchanges on the proxy, not counting the /readyz request that asks. */
const openExchanges = async () => ((await (await fetch(`http://127.0.0.1:${proxyPort}/readyz`)).json()) as { inflight_http: number }).inflight_http - 1;
/** Requests that reached a sim instance at all: finished, abandoned or still running. */
const reached = async () => {
  let n = 0;
  for (const u of simUrls) {
    const s = (await (await fetch(`${u}/sim/stats`)).json()) as { running: number; completed: number; disconnects: number };
    n += s.running + s.completed + s.disconnects;
  }
  return n;
};

beforeAll(async () => {
  await redis.start();
  const cpPort = await freePort();
  procs.push(await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: redis.url, INSTANCE_TTL_S: '120' }).start(cpPort));
  cpUrl = `http://127.0.0.1:${cpPort}`;
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    procs.push(await new AppProcess('apps/sim-instance/src/main.ts', { TOKEN_MS: '10', TOKEN_MS_PER_BATCH: '0', TTFT_BASE_MS: '5' }).start(port));
    simUrls.push(`http://127.0.0.1:${port}`);
    const res = await fetch(`${cpUrl}/v1/instances`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ instance_id: `h-${i}`, url: simUrls[i], models: ['sim-llama'], max_inflight: 2 }) });
    expect(res.ok).toBe(true);
  }
  proxyPort = await freePort();
  proxy = await new AppProcess('apps/proxy/src/main.ts', { REDIS_URL: redis.url, PROXY_NAME: 'http', RECONCILE_S: '1', DRAIN_SETTLE_S: '0' }).start(proxyPort);
  procs.push(proxy);
  expect(await waitFor(async () => (await fetch(`http://127.0.0.1:${proxyPort}/readyz`)).ok)).toBe(true);
});

afterAll(async () => {
  for (const p of procs.reverse()) await p.stop();
  await redis.stop();
});

const chatRequest = (body: object) => {
  const data = JSON.stringify(body);
  return `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(data)}\r\n\r\n${data}`;
};

/** Sends `n` requests in one write on one connection, reads `bytes` of the answer, then closes the socket. */
function pipelineAndLeave(n: number, bytes: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(proxyPort, '127.0.0.1', () => {
      socket.write(Array.from({ length: n }, () => chatRequest({ model: 'sim-llama', messages: [], max_tokens: 200, stream: true })).join(''));
    });
    let got = 0;
    socket.on('data', (d: Buffer) => {
      got += d.length;
      if (got >= bytes) {
        socket.destroy();
        resolve();
      }
    });
    socket.on('error', reject);
  });
}

describe('proxy HTTP/1.1 edge cases', () => {
  it('pipelined requests, client gone during the first answer: every slot and exchange released, the queued requests never reach an instance', async () => {
    const before = await reached();
    // Two such connections used to make this max_inflight 2 × 2 model unusable through every proxy.
    await pipelineAndLeave(21, 100);
    await pipelineAndLeave(21, 100);
    expect(await waitFor(async () => (await totalInflight()) === 0 && (await openExchanges()) === 0, 1000)).toBe(true);
    // A reconcile (RECONCILE_S=1) rewrites the proxy's share from its local counts: they must be 0 too.
    await sleep(1500);
    expect(await totalInflight()).toBe(0);
    expect(await openExchanges()).toBe(0);
    expect((await reached()) - before).toBe(2);
    const ok = await fetch(`http://127.0.0.1:${proxyPort}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'sim-llama', messages: [], max_tokens: 3 }) });
    expect(ok.status).toBe(200);
  });

  it('after pipelined clients left, a drain finds nothing open and never waits for DRAIN_TIMEOUT_S', async () => {
    await pipelineAndLeave(5, 100);
    expect(await waitFor(async () => (await openExchanges()) === 0, 1000)).toBe(true);
    const exited = proxy.exited();
    proxy.signal('SIGTERM');
    expect(await exited).toBe(0);
    expect(proxy.output).toMatch(/waiting for 0 open exchange\(s\)/);
    expect(proxy.output).not.toMatch(/DRAIN_TIMEOUT_S .* passed/);
  });
});
