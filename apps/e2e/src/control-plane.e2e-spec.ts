import { freePort, RedisServer } from '@switchyard/testing';
import { RedisLoadStore } from '@switchyard/load-store';
import Redis from 'ioredis';
import { REGISTRY_SNAPSHOT_EVENT, RegistrySnapshot } from '@switchyard/contracts';
import { AppProcess } from './processes';

jest.setTimeout(60_000);

const TOKEN = 'e2e-secret';
const redis = new RedisServer();
let cp: AppProcess;
let base = '';

async function call(method: string, path: string, body?: unknown, token: string | null = TOKEN) {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

beforeAll(async () => {
  await redis.start();
  const port = await freePort();
  cp = await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: redis.url, ADMIN_TOKEN: TOKEN, INSTANCE_TTL_S: '2' }).start(port);
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await cp?.stop();
  await redis.stop();
});

describe('control plane as a process', () => {
  it('is healthy and ready with Redis up', async () => {
    expect((await call('GET', '/healthz', undefined, null)).status).toBe(200);
    expect((await call('GET', '/readyz', undefined, null)).status).toBe(200);
  });

  it('needs the admin token', async () => {
    const r = await call('GET', '/v1/instances', undefined, null);
    expect(r.status).toBe(401);
    expect(r.body.error.type).toBe('authentication_error');
    expect((await call('GET', '/v1/instances', undefined, 'wrong')).status).toBe(401);
  });

  it('registers with inflight 0, derives the id and answers the heartbeat interval', async () => {
    const r = await call('POST', '/v1/instances', { host: '127.0.0.1', port: 9101, models: ['m1'] });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ instance_id: 'hp_127.0.0.1:9101', heartbeat_interval_s: 1, ttl_s: 2 });
    const got = await call('GET', '/v1/instances/hp_127.0.0.1:9101');
    expect(got.body).toMatchObject({ is_alive: true, url: 'http://127.0.0.1:9101', weight: 1, load: { inflight: 0, qps_1m: null, gpu_util: null } });
  });

  it('keeps a live count on re-registration and never lets a heartbeat change it', async () => {
    await call('POST', '/v1/instances', { instance_id: 'keep', url: 'http://127.0.0.1:9102', models: ['m2'] });
    // A proxy takes two slots through the shared store.
    const proxy = new RedisLoadStore({ url: redis.url });
    await proxy.acquire({ proxyId: 'px', model: 'm2', strategy: 'least_load' });
    await proxy.acquire({ proxyId: 'px', model: 'm2', strategy: 'least_load' });
    await proxy.close();
    await call('POST', '/v1/instances', { instance_id: 'keep', url: 'http://127.0.0.1:9102', models: ['m2'], weight: 2 });
    let got = await call('GET', '/v1/instances/keep');
    expect(got.body.load.inflight).toBe(2);
    expect(got.body.weight).toBe(2);

    const rejected = await call('POST', '/v1/instances/keep/heartbeat', { inflight: 0, qps_1m: 1 });
    expect(rejected.status).toBe(400);
    expect(rejected.body.error.message).toMatch(/counted by the proxies/);
    expect((await call('POST', '/v1/instances/keep/heartbeat', { qps_1m: 3, gpu_util: 55 })).status).toBe(200);
    const legacy = await call('POST', '/v1/instance/heartbeat', { instance_id: 'keep', inflight: 0 });
    expect(legacy.body).toEqual({ ok: true, ignored: ['inflight'] });
    got = await call('GET', '/v1/instances/keep');
    expect(got.body.load).toEqual({ inflight: 2, qps_1m: 3, gpu_util: 55 });
  });

  it('rejects bad input with a message naming the field and writes nothing', async () => {
    const before = (await call('GET', '/v1/instances?include_dead=true')).body.instances.length;
    const cases: [unknown, RegExp][] = [
      [{ url: 'ftp://h:1', models: ['m'] }, /url/],
      [{ url: 'http://h:1', models: [] }, /models/],
      [{ url: 'http://h:1', models: ['m'], weight: -1 }, /weight/],
      [{ url: 'http://h:1', models: ['m'], extra: 1 }, /extra/],
      ['{not json', /JSON/],
    ];
    for (const [body, field] of cases) {
      const r = await call('POST', '/v1/instances', body);
      expect(r.status).toBe(400);
      expect(r.body.error.message).toMatch(field);
    }
    const big = await call('POST', '/v1/instances', { url: 'http://h:1', models: ['m'], meta: { pad: 'x'.repeat(400_000) } });
    expect(big.status).toBe(413);
    expect((await call('GET', '/v1/instances?include_dead=true')).body.instances.length).toBe(before);
  });

  it('answers 404 for heartbeats of unknown instances so agents re-register', async () => {
    const r = await call('POST', '/v1/instances/ghost/heartbeat', {});
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('instance_not_found');
  });

  it('expires an instance after the TTL and lists it only with include_dead', async () => {
    await call('POST', '/v1/instances', { instance_id: 'fading', url: 'http://127.0.0.1:9103', models: ['m3'] });
    await new Promise((r) => setTimeout(r, 2300));
    const alive = (await call('GET', '/v1/instances')).body.instances.map((i: { instance_id: string }) => i.instance_id);
    expect(alive).not.toContain('fading');
    const all = (await call('GET', '/v1/instances?include_dead=true')).body.instances;
    expect(all.find((i: { instance_id: string }) => i.instance_id === 'fading')).toMatchObject({ is_alive: false });
    const store = new RedisLoadStore({ url: redis.url });
    expect((await store.acquire({ proxyId: 'px', model: 'm3', strategy: 'least_load' })).kind).toBe('none_alive');
    await store.close();
  });

  it('removes instances by the primary route and the legacy alias', async () => {
    await call('POST', '/v1/instance/register', { instance_id: 'old', url: 'http://127.0.0.1:9104', models: ['m4'] });
    expect((await call('GET', '/v1/instance/list')).body.instances.some((i: { instance_id: string }) => i.instance_id === 'old')).toBe(true);
    expect((await call('POST', '/v1/instance/unregister', { instance_id: 'old' })).status).toBe(200);
    expect((await call('GET', '/v1/instances/old')).status).toBe(404);
    await call('POST', '/v1/instances', { instance_id: 'gone', url: 'http://127.0.0.1:9105', models: ['m5'] });
    expect((await call('DELETE', '/v1/instances/gone')).status).toBe(200);
    expect((await call('DELETE', '/v1/instances/gone')).status).toBe(404);
  });

  it('publishes a versioned full registry snapshot over the Redis transport on every change', async () => {
    const sub = new Redis(redis.url);
    const got: RegistrySnapshot[] = [];
    await sub.subscribe(REGISTRY_SNAPSHOT_EVENT);
    sub.on('message', (_channel, message) => got.push((JSON.parse(message) as { data: RegistrySnapshot }).data));
    await call('POST', '/v1/instances', { instance_id: 'evented', url: 'http://127.0.0.1:9106', models: ['m6'] });
    const deadline = Date.now() + 5000;
    while (!got.some((s) => s.instances.some((i) => i.instance_id === 'evented')) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const first = got.find((s) => s.instances.some((i) => i.instance_id === 'evented'));
    expect(first).toBeDefined();
    expect(first?.version).toBeGreaterThan(0);
    await call('DELETE', '/v1/instances/evented');
    const until = Date.now() + 5000;
    while (!got.some((s) => s.version > (first?.version ?? 0)) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    const later = got.filter((s) => s.version > (first?.version ?? 0));
    expect(later.length).toBeGreaterThan(0);
    expect(later[later.length - 1].instances.some((i) => i.instance_id === 'evented')).toBe(false);
    sub.disconnect();
  });

  it('logs one JSON line per request with its id and status, never the token or the body', async () => {
    await fetch(`${base}/v1/instances`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'x-request-id': 'cp-log-1' },
      body: JSON.stringify({ url: 'http://127.0.0.1:9', models: ['m-log'], meta: { note: 'secret-meta-value' } }),
    });
    let line: string | undefined;
    for (let i = 0; i < 50 && !line; i++) {
      line = cp.output.split('\n').find((l) => l.includes('cp-log-1') && l.includes('request completed'));
      if (!line) await new Promise((r) => setTimeout(r, 50));
    }
    expect(JSON.parse(line as string)).toMatchObject({ req: { id: 'cp-log-1', method: 'POST', url: '/v1/instances' }, res: { status: 200 } });
    expect(cp.output).not.toContain(TOKEN);
    expect(cp.output).not.toContain('secret-meta-value');
  });

  it('stops at start on a bad config value, naming the variable', async () => {
    const bad = new AppProcess('apps/control-plane/src/main.ts', { INSTANCE_TTL_S: 'soon', PORT: '1' });
    expect(await bad.runToExit()).not.toBe(0);
    expect(bad.output).toContain('INSTANCE_TTL_S');
  });
});
