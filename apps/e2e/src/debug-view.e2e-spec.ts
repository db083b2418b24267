import type { DebugStatusResponse, InstanceLoadsResponse, InstanceLoadView, ProxyInfo } from '@switchyard/contracts';
import { REAP_GRACE_MS, RedisLoadStore } from '@switchyard/load-store';
import { freePort, RedisServer } from '@switchyard/testing';
import OpenAI from 'openai';
import { answerJson, chatCompletion, FakeUpstream } from './fake-upstream';
import { AppProcess } from './processes';

jest.setTimeout(90_000);

const TOKEN = 'debug-secret';
const SWEEP_S = 0.2;
const redis = new RedisServer();
let cp: AppProcess;
let base = '';
/** Plays the proxies: leases, queues and slots go straight into the shared store, as proxy processes write them. */
let proxies: RedisLoadStore;
let keepAlive: NodeJS.Timeout | undefined;

async function call<T = any>(path: string, init: { method?: string; body?: unknown; token?: string | null } = {}) {
  const headers: Record<string, string> = {};
  const token = init.token === undefined ? TOKEN : init.token;
  if (token) headers.authorization = `Bearer ${token}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + path, { method: init.method ?? 'GET', headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) });
  const text = await res.text();
  const isJson = (res.headers.get('content-type') ?? '').includes('json');
  return { status: res.status, body: (isJson && text ? JSON.parse(text) : text) as T };
}

/** Polls until the condition holds or the deadline passes; returns the last value so a failure shows it. */
async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  let v = await read();
  while (!ok(v) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    v = await read();
  }
  return v;
}

const loads = async (query = '') => (await call<InstanceLoadsResponse>(`/debug/instance_loads${query}`)).body;
const byId = (view: InstanceLoadsResponse, id: string) => view.instances.find((i) => i.instance_id === id) as InstanceLoadView;
const metric = (text: string, series: string) => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};
const lease = (proxy_id: string, queued: Record<string, number>): ProxyInfo => ({ proxy_id, inflight_http: 0, queued, draining: false, degraded: false });

beforeAll(async () => {
  await redis.start();
  const port = await freePort();
  cp = await new AppProcess('apps/control-plane/src/main.ts', {
    REDIS_URL: redis.url,
    ADMIN_TOKEN: TOKEN,
    INSTANCE_TTL_S: '2',
    LEASE_SWEEP_S: String(SWEEP_S),
  }).start(port);
  base = `http://127.0.0.1:${port}`;
  proxies = new RedisLoadStore({ url: redis.url, connectionName: 'e2e-proxies' });
});

afterAll(async () => {
  clearInterval(keepAlive);
  await proxies?.close();
  await cp?.stop();
  await redis.stop();
});

describe('debug view, status and metrics of the control plane process', () => {
  it('guards /debug with the admin token and leaves /metrics open', async () => {
    for (const path of ['/debug/instance_loads', '/debug/instance_loads?include_dead=true', '/debug/status']) {
      const r = await call(path, { token: null });
      expect(r.status).toBe(401);
      expect(r.body.error.type).toBe('authentication_error');
      expect((await call(path, { token: 'wrong' })).status).toBe(401);
      expect((await call(path)).status).toBe(200);
    }
    const m = await call<string>('/metrics', { token: null });
    expect(m.status).toBe(200);
    expect(metric(m.body, 'switchyard_store_up')).toBe(1);
  });

  it('shows every proxy share, the queues per instance, and null metrics until an instance reports', async () => {
    for (const [id, models] of [['i1', ['m-a', 'm-b']], ['i2', ['m-a']]] as const) {
      expect((await call(`/v1/instances`, { method: 'POST', body: { instance_id: id, url: `http://127.0.0.1:1/${id}`, models } })).status).toBe(200);
    }
    keepAlive = setInterval(() => {
      for (const id of ['i1', 'i2']) void call(`/v1/instances/${id}/heartbeat`, { method: 'POST', body: {} }).catch(() => undefined);
    }, 300);
    await proxies.renewLease(lease('pA', { 'm-a': 2, 'm-b': 1 }), 60_000);
    await proxies.renewLease(lease('pB', { 'm-b': 4 }), 60_000);
    for (let i = 0; i < 3; i++) expect(await proxies.acquire({ proxyId: 'pA', model: 'm-b', strategy: 'least_load' })).toMatchObject({ instance_id: 'i1' });
    expect(await proxies.acquire({ proxyId: 'pB', model: 'm-a', strategy: 'least_load', exclude: ['i2'] })).toMatchObject({ instance_id: 'i1' });
    for (let i = 0; i < 2; i++) expect(await proxies.acquire({ proxyId: 'pB', model: 'm-a', strategy: 'least_load', exclude: ['i1'] })).toMatchObject({ instance_id: 'i2' });

    const view = await loads();
    expect(view.null_semantics).toBe('0 means measured zero; null means unknown');
    expect(view.metric_source).toEqual({ inflight: 'proxy_lifecycle_counter', qps_1m: 'heartbeat', gpu_util: 'heartbeat', engine: 'probe_metrics_scrape', stats: 'proxy_exchange_counters' });
    expect(byId(view, 'i1')).toMatchObject({
      url: 'http://127.0.0.1:1/i1',
      models: ['m-a', 'm-b'],
      alive: true,
      is_alive: true,
      weight: 1,
      max_inflight: null,
      inflight: 4,
      inflight_by_proxy: { pA: 3, pB: 1 },
      qps_1m: null,
      gpu_util: null,
      queued_by_proxy: { pA: 3, pB: 4 },
    });
    expect(byId(view, 'i2')).toMatchObject({ inflight: 2, inflight_by_proxy: { pB: 2 }, qps_1m: null, gpu_util: null, queued_by_proxy: { pA: 2 } });
    expect(Number.isNaN(Date.parse(byId(view, 'i1').last_seen_at))).toBe(false);
    expect(view.proxies.map((p) => [p.proxy_id, p.alive, p.queued])).toEqual([
      ['pA', true, { 'm-a': 2, 'm-b': 1 }],
      ['pB', true, { 'm-b': 4 }],
    ]);

    // A measured zero is 0, a metric never reported stays null.
    expect((await call('/v1/instances/i1/heartbeat', { method: 'POST', body: { qps_1m: 1.5, gpu_util: 0 } })).status).toBe(200);
    const after = await loads();
    expect(byId(after, 'i1')).toMatchObject({ qps_1m: 1.5, gpu_util: 0, inflight: 4 });
    expect(byId(after, 'i2')).toMatchObject({ qps_1m: null, gpu_util: null });

    const status = (await call<DebugStatusResponse>('/debug/status')).body;
    expect(status).toMatchObject({ status: 'ok', instances: { alive: 2, expired: 0 }, proxies: { alive: 2, expired: 0, draining: 0 }, inflight_total: 6, queued_total: 7 });
  });

  it('exports the same numbers on /metrics', async () => {
    const text = (await call<string>('/metrics', { token: null })).body;
    expect(metric(text, 'switchyard_instances{state="alive"}')).toBe(2);
    expect(metric(text, 'switchyard_instances{state="expired"}')).toBe(0);
    expect(metric(text, 'switchyard_instance_inflight{instance_id="i1"}')).toBe(4);
    expect(metric(text, 'switchyard_instance_inflight{instance_id="i2"}')).toBe(2);
    expect(metric(text, 'switchyard_instance_qps_1m{instance_id="i1"}')).toBe(1.5);
    expect(metric(text, 'switchyard_instance_gpu_util{instance_id="i1"}')).toBe(0);
    expect(metric(text, 'switchyard_instance_gpu_util{instance_id="i2"}')).toBeUndefined();
    expect(metric(text, 'switchyard_proxies{state="alive"}')).toBe(2);
    expect(metric(text, 'switchyard_queued_requests')).toBe(7);
    expect(metric(text, 'switchyard_leases_reaped_total')).toBe(0);
    expect(metric(text, 'switchyard_control_plane_http_requests_total{route="/debug/status",method="GET",status="401"}')).toBeGreaterThanOrEqual(2);
    expect(text).toContain('switchyard_control_plane_process_resident_memory_bytes');
  });

  it('lists an expired instance only with include_expired (include_dead, its deprecated name, still works)', async () => {
    await call('/v1/instances', { method: 'POST', body: { instance_id: 'silent', url: 'http://127.0.0.1:1/silent', models: ['m-a'] } });
    const gone = await until(loads, (v) => !v.instances.some((i) => i.instance_id === 'silent'), 5000);
    expect(gone.instances.map((i) => i.instance_id)).toEqual(['i1', 'i2']);
    expect(byId(await loads('?include_expired=true'), 'silent')).toMatchObject({ alive: false, is_alive: false, inflight: 0, queued_by_proxy: { pA: 2 } });
    expect(byId(await loads('?include_dead=true'), 'silent')).toMatchObject({ alive: false });
    expect((await call<DebugStatusResponse>('/debug/status')).body.instances).toEqual({ alive: 2, expired: 1 });
  });

  it('drops a proxy that stops renewing its lease from every count within the TTL, the reap grace and a sweep, keeping the other', async () => {
    const ttlMs = 1000;
    await proxies.renewLease(lease('pA', { 'm-a': 2, 'm-b': 1 }), ttlMs);
    const view = await until(loads, (v) => byId(v, 'i1').inflight_by_proxy.pA === undefined, ttlMs + REAP_GRACE_MS + SWEEP_S * 1000 + 3000);
    expect(byId(view, 'i1')).toMatchObject({ inflight: 1, inflight_by_proxy: { pB: 1 }, queued_by_proxy: { pB: 4 } });
    expect(byId(view, 'i2')).toMatchObject({ inflight: 2, inflight_by_proxy: { pB: 2 }, queued_by_proxy: {} });
    // Reaped, not merely expired: gone from include_dead too.
    expect((await loads('?include_dead=true')).proxies.map((p) => p.proxy_id)).toEqual(['pB']);
    expect((await call<DebugStatusResponse>('/debug/status')).body).toMatchObject({ proxies: { alive: 1, expired: 0, draining: 0 }, inflight_total: 3, queued_total: 4 });
    const text = (await call<string>('/metrics', { token: null })).body;
    expect(metric(text, 'switchyard_leases_reaped_total')).toBe(1);
    expect(metric(text, 'switchyard_instance_inflight{instance_id="i1"}')).toBe(1);
    expect(cp.output).toContain('reaped expired proxy leases: pA');
  });

  it('shows per instance the request counters a real proxy writes with its lease, and drops them with the lease', async () => {
    const upstream = await new FakeUpstream((_req, res, body) => {
      if (JSON.stringify(body.messages).includes('fail')) return answerJson(res, 500, { error: { message: 'engine fell over', type: 'server_error', code: null } });
      answerJson(res, 200, chatCompletion('ok'));
    }).listen();
    expect((await call('/v1/instances', { method: 'POST', body: { instance_id: 'real', url: upstream.url, models: ['m-real'] } })).status).toBe(200);
    // This suite's instance ttl is short: keep it alive while the proxy starts and asks.
    const beat = setInterval(() => void call('/v1/instances/real/heartbeat', { method: 'POST', body: {} }).catch(() => undefined), 300);
    const port = await freePort();
    const proxy = await new AppProcess('apps/proxy/src/main.ts', { REDIS_URL: redis.url, PROXY_NAME: 'counting' }).start(port);
    try {
      const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'unused', maxRetries: 0 });
      const ask = (content: string) => client.chat.completions.create({ model: 'm-real', messages: [{ role: 'user', content }] });
      for (let i = 0; i < 3; i++) await ask('hi');
      await expect(ask('fail')).rejects.toMatchObject({ status: 500 });
      // Written with the next lease renewal (every second), summed over alive proxies.
      const view = await until(loads, (v) => byId(v, 'real')?.stats.requests === 4, 5000);
      expect(byId(view, 'real').stats).toMatchObject({ requests: 4, errors: 1, client_gone: 0 });
      expect(byId(view, 'i1').stats.requests).toBe(0);
      expect(view.ttft_buckets_ms.length + 1).toBe(byId(view, 'real').stats.ttft_ms.length);
    } finally {
      clearInterval(beat);
      await proxy.stop();
      await upstream.close();
    }
    // The proxy dropped its lease on the way out: its counters left with it.
    expect(byId(await loads(), 'real').stats.requests).toBe(0);
    expect((await call('/v1/instances/real', { method: 'DELETE' })).status).toBe(200);
  });

  it('reports not ready while Redis is down and ready again by itself once it is back on the same port', async () => {
    clearInterval(keepAlive);
    const readyz = () => call('/readyz', { token: null });
    expect((await readyz()).status).toBe(200);
    await redis.stop();

    const down = await until(readyz, (r) => r.status === 503, 10_000);
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ status: 'not_ready', store: 'unreachable', error: { type: 'service_unavailable', code: 'store_unreachable' } });
    expect((await call('/debug/status')).status).toBe(503);
    expect(metric((await call<string>('/metrics', { token: null })).body, 'switchyard_store_up')).toBe(0);

    await redis.start();
    const up = await until(readyz, (r) => r.status === 200, 10_000);
    expect(up.body).toEqual({ status: 'ready', store: 'ok' });
    const status = await until(() => call<DebugStatusResponse>('/debug/status'), (r) => r.status === 200, 5000);
    // A Redis without persistence comes back empty: the proxies' leases are gone, and the control
    // plane registers again what it knew (i1, i2; `real` was deleted), in its own time.
    expect(status.body).toMatchObject({ proxies: { alive: 0, expired: 0, draining: 0 } });
    const ids = async () => ((await call<{ instances: { instance_id: string }[] }>('/v1/instances?include_expired=true')).body.instances ?? []).map((i) => i.instance_id).sort();
    const back = await until(ids, (list) => list.includes('i1') && list.includes('i2'), 10_000);
    expect(back).toEqual(expect.arrayContaining(['i1', 'i2']));
    expect(back).not.toContain('real');
    const text = (await call<string>('/metrics', { token: null })).body;
    expect(metric(text, 'switchyard_store_up')).toBe(1);
    expect(metric(text, 'switchyard_store_errors_total')).toBeGreaterThan(0);
  });
});
