import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { RedisLoadStore } from '@switchyard/load-store';
import { RedisServer, waitFor } from '@switchyard/testing';
import { loadProxyConfig } from './proxy-config';
import { createProxyApp, ProxyApp } from './shell/create-proxy-app';

/** An in-process engine whose answer each test scripts; `closed` counts requests whose client (the proxy) went away. */
class Upstream {
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void = (_req, res) => json(res, 200, { ok: true });
  seen: http.IncomingHttpHeaders[] = [];
  closed = 0;
  readonly server = http.createServer((req, res) => {
    this.seen.push(req.headers);
    req.resume();
    req.on('end', () => this.handler(req, res));
    res.on('close', () => {
      if (!res.writableFinished) this.closed += 1;
    });
  });
  get url() {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
}

function json(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const data = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), ...headers });
  res.end(data);
}
const sse = (res: http.ServerResponse) => res.writeHead(200, { 'content-type': 'text/event-stream' });

const redis = new RedisServer();
const ups = [new Upstream(), new Upstream()];
let store: RedisLoadStore;
let proxy: ProxyApp;
let base = '';
let logs: Record<string, unknown>[] = [];
let releases: boolean[] = [];
let pool = 0;

async function startProxy(env: Record<string, string> = {}, maxInflight: number | null = null) {
  store = new RedisLoadStore({ url: redis.url, pool: `fw${++pool}`, autoPipelining: true });
  for (const [i, u] of ups.entries()) await store.register({ instance_id: `u${i}`, url: u.url, models: ['m'], endpoints: [], tags: [], weight: 1, max_inflight: maxInflight, meta: {}, ttl_s: 60 });
  const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  const config = loadProxyConfig({ LOG_LEVEL: 'info', DRAIN_SETTLE_S: '0', DRAIN_TIMEOUT_S: '0.3', QUEUE_TIMEOUT_S: '0.3', REQUEST_BODY_TIMEOUT_S: '0.3', FAILURE_COOLDOWN_S: '0', ...env });
  proxy = await createProxyApp(config, store, { logger });
  // Each slot the ledger hands out notes, when released, whether the proxy had already aborted that exchange's upstream call.
  const slots = proxy.runtime.slots;
  const acquire = slots.acquire.bind(slots);
  slots.acquire = async (model, tried, affinity) => {
    const r = await acquire(model, tried, affinity);
    if (r.kind !== 'acquired') return r;
    const { slot } = r;
    const release = () => {
      releases.push([...proxy.runtime.exchanges.all].some((ex) => ex.instanceId === slot.instanceId && ex.signal.aborted));
      slot.release();
    };
    return { kind: 'acquired', slot: { ...slot, release } };
  };
  await proxy.listen(0, '127.0.0.1');
  base = `http://127.0.0.1:${(proxy.app.getHttpServer().address() as AddressInfo).port}`;
}

beforeAll(async () => {
  await redis.start();
  for (const u of ups) await new Promise<void>((r) => u.server.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  for (const u of ups) {
    u.server.closeAllConnections();
    await new Promise((r) => u.server.close(r));
  }
  await redis.stop();
});
beforeEach(async () => {
  logs = [];
  releases = [];
  for (const u of ups) {
    u.closed = 0;
    u.seen = [];
    u.handler = (_req, res) => json(res, 200, { ok: true });
  }
  await startProxy();
});
afterEach(async () => {
  // The drain test has closed it already.
  await proxy.close().catch(() => undefined);
  await store.close();
});

const post = (body: unknown = { model: 'm' }, headers: Record<string, string> = {}) =>
  fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
const storeInflight = async () => (await store.listInstances()).reduce((s, i) => s + i.load.inflight, 0);
/** Every claim given back: the ledger's, the store's, and the open exchanges. */
const allReleased = () => waitFor(async () => proxy.runtime.slots.total === 0 && proxy.runtime.exchanges.open === 0 && (await storeInflight()) === 0, 2000, 10);
const accessLog = () => logs.filter((l) => l.msg === 'request');

/** Sends a request and, once `when` says so, destroys the client socket. */
function leave(when: 'before_headers' | 'after_first_chunk'): Promise<void> {
  return new Promise((resolve) => {
    const req = http.request(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.on('error', () => undefined);
    req.end(JSON.stringify({ model: 'm' }));
    if (when === 'before_headers') void waitFor(() => ups.some((u) => u.seen.length > 0), 2000, 5).then(() => (req.destroy(), resolve()));
  });
}

describe('Forwarder: one slot per exchange, released exactly once on every path', () => {
  it('body end (whole and streamed): released, logged complete with the upstream status', async () => {
    expect((await post()).status).toBe(200);
    for (const u of ups) u.handler = (_req, res) => (sse(res), res.write('data: 1\n\n'), res.end('data: [DONE]\n\n'));
    expect(await (await post()).text()).toBe('data: 1\n\ndata: [DONE]\n\n');
    expect(await allReleased()).toBe(true);
    expect(accessLog().map((l) => [l.status, l.complete])).toEqual([[200, true], [200, true]]);
  });

  it('client gone before the headers: upstream aborted first, then released; logged 499 complete:false and counted apart', async () => {
    for (const u of ups) u.handler = () => undefined;
    await leave('before_headers');
    expect(await allReleased()).toBe(true);
    expect(await waitFor(() => ups.reduce((s, u) => s + u.closed, 0) === 1, 2000, 5)).toBe(true);
    expect(releases).toEqual([true]);
    expect(await waitFor(() => accessLog().length === 1, 1000, 5)).toBe(true);
    expect(accessLog()[0]).toMatchObject({ status: 499, complete: false, model: 'm' });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/switchyard_proxy_http_requests_total\{route="\/v1\/chat\/completions",method="POST",status="499"\} 1/);
  });

  it('client gone after the headers, mid-stream: upstream aborted, slot released', async () => {
    for (const u of ups) u.handler = (_req, res) => (sse(res), res.write('data: 1\n\n'));
    await leave('after_first_chunk');
    expect(await allReleased()).toBe(true);
    expect(await waitFor(() => ups.reduce((s, u) => s + u.closed, 0) === 1, 2000, 5)).toBe(true);
    expect(releases).toEqual([true]);
  });

  it('upstream unreachable: retried on another instance, both slots released', async () => {
    await store.register({ instance_id: 'u0', url: 'http://127.0.0.1:1', models: ['m'], endpoints: [], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 60 });
    await store.remove('u1');
    await store.register({ instance_id: 'u1', url: ups[1].url, models: ['m'], endpoints: [], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 60 });
    for (let i = 0; i < 4; i++) expect((await post()).status).toBe(200);
    expect(await allReleased()).toBe(true);
  });

  it('429/503 everywhere: retried, released; on the last try: that answer as it was, with its own body and Retry-After', async () => {
    ups[0].handler = (_req, res) => json(res, 503, { error: { message: 'busy' } }, { 'retry-after': '7' });
    ups[1].handler = ups[0].handler;
    const last = await post();
    expect(last.status).toBe(503);
    expect(last.headers.get('retry-after')).toBe('7');
    expect(await last.json()).toEqual({ error: { message: 'busy' } });
    ups[1].handler = (_req, res) => json(res, 429, { error: { message: 'slow down' } }, { 'retry-after': '3' });
    const mixed = await post();
    expect([429, 503]).toContain(mixed.status);
    expect(mixed.headers.get('retry-after')).toBe(mixed.status === 429 ? '3' : '7');
    expect(await allReleased()).toBe(true);
  });

  it('queue timeout: the waiting request gets 503 and holds nothing; the running one is released at its end', async () => {
    await proxy.close();
    await store.close();
    await startProxy({}, 1);
    const finish: (() => void)[] = [];
    for (const u of ups) u.handler = (_req, res) => (sse(res), res.write('data: 1\n\n'), finish.push(() => res.end('data: [DONE]\n\n')));
    const running = await Promise.all([post(), post()]);
    const waiting = await post();
    expect(waiting.status).toBe(503);
    expect(((await waiting.json()) as { error: { code: string } }).error.code).toBe('queue_timeout');
    expect(proxy.runtime.slots.total).toBe(2);
    for (const f of finish) f();
    for (const r of running) await r.text();
    expect(await allReleased()).toBe(true);
  });

  it('client gone while queued: leaves the queue holding nothing, and no instance hears of it', async () => {
    await proxy.close();
    await store.close();
    await startProxy({ QUEUE_TIMEOUT_S: '30' }, 1);
    const finish: (() => void)[] = [];
    for (const u of ups) u.handler = (_req, res) => (sse(res), res.write('data: 1\n\n'), finish.push(() => res.end('data: [DONE]\n\n')));
    const running = await Promise.all([post(), post()]);
    const req = http.request(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } });
    req.on('error', () => undefined);
    req.end(JSON.stringify({ model: 'm' }));
    expect(await waitFor(() => proxy.runtime.queue.length === 1, 2000, 5)).toBe(true);
    req.destroy();
    expect(await waitFor(() => proxy.runtime.queue.length === 0 && proxy.runtime.exchanges.open === 2, 2000, 5)).toBe(true);
    expect(proxy.runtime.slots.total).toBe(2);
    expect(ups.reduce((n, u) => n + u.seen.length, 0)).toBe(2);
    for (const f of finish) f();
    for (const r of running) await r.text();
    expect(await allReleased()).toBe(true);
    expect(accessLog().find((l) => l.status === 499)).toMatchObject({ complete: false, instance_id: null });
  });

  it('drain timeout: open streams end with an error event and their slots are released', async () => {
    for (const u of ups) u.handler = (_req, res) => (sse(res), res.write('data: 1\n\n'));
    const res = await post();
    const text = res.text();
    await proxy.drain();
    expect(await text).toMatch(/^data: 1\n\ndata: \{"error".*shutting down/s);
    expect(await waitFor(async () => proxy.runtime.slots.total === 0 && (await storeInflight()) === 0, 2000, 10)).toBe(true);
    expect(releases).toEqual([true]);
  });
});

describe('HTTP/1.1 edge cases', () => {
  it('Expect: 100-continue (curl sends it for bodies over 1 MiB) is answered and forwarded', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', expect: '100-continue' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.on('continue', () => req.end(JSON.stringify({ model: 'm' })));
    });
    expect(status).toBe(200);
    expect(ups.flatMap((u) => u.seen).every((h) => h.expect === undefined)).toBe(true);
  });

  it('headers named in Connection: are dropped both ways', async () => {
    for (const u of ups) u.handler = (_req, res) => json(res, 200, { ok: true }, { connection: 'x-up-hop', 'x-up-hop': '1', 'x-up-end': '1' });
    const res = await new Promise<http.IncomingMessage>((resolve) => {
      const req = http.request(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', connection: 'keep-alive, x-client-hop', 'x-client-hop': 'secret', 'x-client-end': '1' } }, resolve);
      req.end(JSON.stringify({ model: 'm' }));
    });
    res.resume();
    const seen = ups.flatMap((u) => u.seen)[0];
    expect(seen['x-client-hop']).toBeUndefined();
    expect(seen['x-client-end']).toBe('1');
    expect(res.headers['x-up-hop']).toBeUndefined();
    expect(res.headers['x-up-end']).toBe('1');
  });

  it('a whole (non-streaming) response keeps the upstream content-length', async () => {
    const res = await post();
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(JSON.stringify({ ok: true }))));
    expect(res.headers.get('transfer-encoding')).toBeNull();
  });

  it('a request body that never finishes is cut by REQUEST_BODY_TIMEOUT_S with 408, and nothing is held', async () => {
    const answer = await new Promise<string>((resolve) => {
      const socket = net.connect(Number(new URL(base).port), '127.0.0.1', () => {
        socket.write('POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"model":');
      });
      let got = '';
      socket.on('data', (d) => (got += d));
      socket.on('close', () => resolve(got));
    });
    expect(answer).toMatch(/^HTTP\/1.1 408/);
    expect(answer).toMatch(/REQUEST_BODY_TIMEOUT_S/);
    expect(ups.every((u) => u.seen.length === 0)).toBe(true);
    expect(await allReleased()).toBe(true);
  });
});
