import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { freePort, RedisServer, waitFor } from '@switchyard/testing';
import { RedisLoadStore } from '@switchyard/load-store';
import { AppProcess } from './processes';

jest.setTimeout(60_000);

const READ = 'grafana-read-token-0123456789';
const OPS = 'ops-admin-token-0123456789abcdef';
const redis = new RedisServer();
const dir = mkdtempSync(path.join(os.tmpdir(), 'sy-edge-'));
let cp: AppProcess;
let base = '';

interface Answer {
  status: number;
  body: { error?: { message: string; type: string; code: string | null; param?: string | null } } & Record<string, unknown>;
}

async function raw(method: string, url: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  const res = await fetch(base + url, { method, headers, body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {} };
}

const json = (method: string, url: string, body?: unknown, token = OPS) =>
  raw(method, url, { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body === undefined ? undefined : JSON.stringify(body));

const ids = async () => ((await json('GET', '/v1/instances?include_dead=true')).body.instances as { instance_id: string }[]).map((i) => i.instance_id).sort();

beforeAll(async () => {
  await redis.start();
  // Roles come from the config file, as an operator would keep them.
  const config = path.join(dir, 'switchyard.yaml');
  writeFileSync(config, `control_plane:\n  admin_tokens: "grafana:read:${READ},ops:admin:${OPS}"\n`);
  const port = await freePort();
  cp = await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: redis.url, SWITCHYARD_CONFIG: config, LOG_LEVEL: 'warn' }).start(port);
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await cp?.stop();
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('closed by default', () => {
  it('refuses to start on a non-loopback HOST without a token, naming ADMIN_TOKEN, exit 2', async () => {
    const open = new AppProcess('apps/control-plane/src/main.ts', { HOST: '0.0.0.0', PORT: String(await freePort()), REDIS_URL: redis.url, ADMIN_TOKEN: '' });
    expect(await open.runToExit()).toBe(2);
    expect(open.output).toMatch(/invalid configuration: ADMIN_TOKEN: required when HOST \(0\.0\.0\.0\) is not a loopback address/);
  });

  it('starts open there only with ALLOW_OPEN_ADMIN=true, and says so', async () => {
    const port = await freePort();
    const open = await new AppProcess('apps/control-plane/src/main.ts', { HOST: '0.0.0.0', REDIS_URL: redis.url, ALLOW_OPEN_ADMIN: 'true' }).start(port);
    const warning = new RegExp(`ADMIN_TOKEN is not set: the admin API is open to anyone who can reach 0\\.0\\.0\\.0:${port}`);
    await waitFor(async () => warning.test(open.output), 5000);
    await open.stop();
    expect(open.output).toMatch(warning);
  });
});

/** A request with a Host header of our choosing (fetch sets its own). */
function withHost(port: number, host: string, method: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: { host } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('open on loopback (npm start)', () => {
  it('answers only requests addressed to a loopback name: a page that rebinds its DNS name to 127.0.0.1 gets 403', async () => {
    const port = await freePort();
    const open = await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: redis.url, LOG_LEVEL: 'warn' }).start(port);
    try {
      expect(await withHost(port, `127.0.0.1:${port}`, 'GET', '/v1/instances')).toBe(200);
      expect(await withHost(port, `localhost:${port}`, 'GET', '/v1/instances')).toBe(200);
      expect(await withHost(port, `attacker.example:${port}`, 'GET', '/v1/instances')).toBe(403);
      expect(await withHost(port, `attacker.example:${port}`, 'DELETE', '/v1/instances/x')).toBe(403);
    } finally {
      await open.stop();
    }
  });
});

describe('admin tokens and roles', () => {
  it('a read token lists and reads the debug view, and gets 403 on every change, which changes nothing', async () => {
    expect((await json('GET', '/v1/instances', undefined, READ)).status).toBe(200);
    expect((await json('GET', '/debug/instance_loads', undefined, READ)).status).toBe(200);
    const before = await ids();
    const denied = await json('POST', '/v1/instances', { instance_id: 'by-reader', url: 'http://127.0.0.1:9', models: ['m'] }, READ);
    expect(denied).toMatchObject({ status: 403, body: { error: { type: 'permission_error', code: 'insufficient_role' } } });
    await json('POST', '/v1/instances', { instance_id: 'keep-me', url: 'http://127.0.0.1:9', models: ['m'] });
    expect((await json('DELETE', '/v1/instances/keep-me', undefined, READ)).status).toBe(403);
    expect(await ids()).toEqual([...before, 'keep-me'].sort());
    await json('DELETE', '/v1/instances/keep-me');
  });

  it('takes the bearer scheme in any case and refuses an unknown token with 401', async () => {
    for (const scheme of ['bearer', 'BEARER', 'Bearer']) expect((await raw('GET', '/v1/instances', { authorization: `${scheme} ${OPS}` })).status).toBe(200);
    const wrong = await raw('GET', '/v1/instances', { authorization: `Bearer ${OPS.slice(0, -1)}` });
    expect(wrong).toMatchObject({ status: 401, body: { error: { type: 'authentication_error', code: 'invalid_admin_token' } } });
  });
});

describe('admin bodies are JSON only', () => {
  const form = 'instance_id=rogue&url=http%3A%2F%2F127.0.0.1%3A9&models=m&weight=1000';
  it.each([
    ['application/x-www-form-urlencoded', form],
    ['text/plain', JSON.stringify({ instance_id: 'rogue', url: 'http://127.0.0.1:9', models: ['m'] })],
    ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="url"\r\n\r\nhttp://127.0.0.1:9\r\n--x--\r\n'],
  ])('a %s registration is 415 in the OpenAI shape and registers nothing', async (type, body) => {
    const before = await ids();
    const r = await raw('POST', '/v1/instances', { authorization: `Bearer ${OPS}`, 'content-type': type }, body);
    expect(r).toMatchObject({ status: 415, body: { error: { type: 'invalid_request_error', code: 'unsupported_media_type' } } });
    expect(r.body.error?.message).toContain(type.split(';')[0]);
    expect(await ids()).toEqual(before);
  });

  it('DELETE with content-type: application/json and no body deletes (as many client libraries send it)', async () => {
    await json('POST', '/v1/instances', { instance_id: 'del-json', url: 'http://127.0.0.1:9', models: ['m'] });
    const r = await raw('DELETE', '/v1/instances/del-json', { authorization: `Bearer ${OPS}`, 'content-type': 'application/json' });
    expect(r).toEqual({ status: 200, body: { ok: true, instance_id: 'del-json' } });
    expect(await ids()).not.toContain('del-json');
  });

  it('DELETE and GET with an empty body of any content-type are accepted', async () => {
    await json('POST', '/v1/instances', { instance_id: 'del-form', url: 'http://127.0.0.1:9', models: ['m'] });
    expect((await raw('GET', '/v1/instances/del-form', { authorization: `Bearer ${OPS}`, 'content-type': 'text/plain' })).status).toBe(200);
    expect((await raw('DELETE', '/v1/instances/del-form', { authorization: `Bearer ${OPS}`, 'content-type': 'application/x-www-form-urlencoded' }, '')).status).toBe(200);
  });

  it('a key named __proto__ is refused by name', async () => {
    const r = await raw('POST', '/v1/instances', { authorization: `Bearer ${OPS}`, 'content-type': 'application/json' }, '{"url":"http://127.0.0.1:9","models":["m"],"meta":{"__proto__":{"admin":true}}}');
    expect(r).toMatchObject({ status: 400, body: { error: { code: 'invalid_body', message: 'body: a key named __proto__ is not accepted' } } });
  });
});

/** One named case per bad input: 400 in the OpenAI shape naming the field, and the instance list unchanged. */
async function refused(body: unknown, param: string, message: RegExp, url = '/v1/instances') {
  const before = await ids();
  const r = await json('POST', url, body);
  expect(r.status).toBe(400);
  expect(r.body.error).toMatchObject({ type: 'invalid_request_error', param });
  expect(r.body.error?.message).toMatch(message);
  expect(await ids()).toEqual(before);
}

describe('registration URLs and endpoints', () => {
  it.each([
    ['ending in ? (it would take over the upstream path)', 'http://127.0.0.1:9/?'],
    ['with a query', 'http://127.0.0.1:9/v1?x=1'],
    ['ending in #', 'http://127.0.0.1:9#'],
    ['with a fragment', 'http://127.0.0.1:9/#frag'],
    ['with credentials', 'http://user:secret@127.0.0.1:9'],
  ])('a url %s is refused naming url', async (_what, url) => {
    await refused({ instance_id: 'bad-url', url, models: ['m'] }, 'url', /^url: must not/);
  });

  it.each([
    ['not a path', ['v1/chat/completions'], 'endpoints.0'],
    ['with a query', ['/v1/chat/completions?stream=true'], 'endpoints.0'],
    ['with a dot-dot segment', ['/v1/../debug/status'], 'endpoints.0'],
    ['listed twice', ['/v1/embeddings', '/v1/embeddings'], 'endpoints.1'],
    ['empty', [], 'endpoints'],
  ])('endpoints %s are refused naming the entry', async (_what, endpoints, param) => {
    await refused({ instance_id: 'bad-endpoints', url: 'http://127.0.0.1:9', models: ['m'], endpoints }, param, /^endpoints/);
  });
});

const path1 = (id: string) => `/v1/instances/${encodeURIComponent(id)}`;

describe('ids every route accepts in full', () => {
  it('an id of 200 characters registers, and is read, heart-beaten and deleted', async () => {
    const id = `${'i'.repeat(190)}:@.-_[]0123`.slice(0, 200);
    expect(id).toHaveLength(200);
    expect((await json('POST', '/v1/instances', { instance_id: id, url: 'http://127.0.0.1:9', models: ['m'] })).status).toBe(200);
    // Sent raw (as most clients do) and percent-encoded throughout.
    expect((await json('GET', `/v1/instances/${id}`)).body.instance_id).toBe(id);
    expect((await json('POST', `${path1(id)}/heartbeat`, {})).status).toBe(200);
    const encoded = [...id].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
    expect((await json('GET', `/v1/instances/${encoded}`)).body.instance_id).toBe(id);
    expect((await json('DELETE', path1(id))).status).toBe(200);
    expect(await ids()).not.toContain(id);
  });

  it('an id of 201 characters is refused naming instance_id', async () => {
    await refused({ instance_id: 'x'.repeat(201), url: 'http://127.0.0.1:9', models: ['m'] }, 'instance_id', /^instance_id: must be 1-200 characters/);
  });

  it('a host whose derived hp_ id would be too long is refused naming host, or url', async () => {
    const host = `${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}`;
    await refused({ host, port: 8000, models: ['m'] }, 'host', /^host: the id derived from it/);
    await refused({ url: `http://${host}:8000`, models: ['m'] }, 'url', /^url: the id derived from it/);
    // With an id of its own it registers, and is removed again.
    expect((await json('POST', '/v1/instances', { instance_id: 'long-host', host, port: 8000, models: ['m'] })).status).toBe(200);
    expect((await json('DELETE', '/v1/instances/long-host')).status).toBe(200);
  });

  it('an id derived from an IPv6 address is read and deleted through its path', async () => {
    const r = await json('POST', '/v1/instances', { url: 'http://[::1]:9', models: ['m'] });
    expect(r.body.instance_id).toBe('hp_[::1]:9');
    expect((await json('GET', '/v1/instances/hp_[::1]:9')).status).toBe(200);
    expect((await json('DELETE', path1('hp_[::1]:9'))).status).toBe(200);
  });

  it('a path id of 262 characters (derived before ids were bounded) is looked up, not refused with 414', async () => {
    const r = await json('DELETE', path1(`hp_${'h'.repeat(253)}:8000`));
    expect(r).toMatchObject({ status: 404, body: { error: { code: 'instance_not_found' } } });
  });

  it('a path id with other characters is 400 naming instance_id, without asking the store', async () => {
    for (const id of ['a b', 'a"b', 'x'.repeat(265), 'a{b}']) {
      const r = await json('GET', path1(id));
      expect([id.slice(0, 10), r.status, r.body.error?.param]).toEqual([id.slice(0, 10), 400, 'instance_id']);
    }
  });
});

describe('bounded names and meta', () => {
  it.each([
    ['a model name with a space', { models: ['llama 3'] }, 'models.0'],
    ['a model name with a newline (log injection)', { models: ['m\nINFO forged'] }, 'models.0'],
    ['a model name of 257 characters', { models: ['m'.repeat(257)] }, 'models.0'],
    ['an empty model name', { models: [''] }, 'models.0'],
    ['a tag with braces', { tags: ['{pool}'] }, 'tags.0'],
    ['a tag of 129 characters', { tags: ['t'.repeat(129)] }, 'tags.0'],
    ['meta that is not an object', { meta: [1, 2] }, 'meta'],
    ['meta nested 9 levels', { meta: { a: { b: { c: { d: { e: { f: { g: { h: { i: 1 } } } } } } } } } }, 'meta'],
    ['meta over 16 KiB', { meta: { pad: 'x'.repeat(16 * 1024) } }, 'meta'],
  ])('%s is refused naming the field', async (_what, fields, param) => {
    await refused({ instance_id: 'bounded', url: 'http://127.0.0.1:9', models: ['m'], ...fields }, param, new RegExp(`^${param.replace('.', '\\.')}: `));
  });

  it('meta nested 4,100 levels is refused and every listing keeps working', async () => {
    const deep = `${'{"a":'.repeat(4100)}1${'}'.repeat(4100)}`;
    const before = await ids();
    const r = await raw('POST', '/v1/instances', { authorization: `Bearer ${OPS}`, 'content-type': 'application/json' }, `{"instance_id":"deep","url":"http://127.0.0.1:9","models":["m"],"meta":${deep}}`);
    expect(r).toMatchObject({ status: 400, body: { error: { param: 'meta', message: expect.stringMatching(/^meta: must nest at most 8 levels/) } } });
    expect(await ids()).toEqual(before);
    expect((await json('GET', '/debug/instance_loads')).status).toBe(200);
  });

  it('meta at the limits is kept as sent', async () => {
    const meta = { a: { b: { c: { d: { e: { f: { g: { h: 'eight' } } } } } } }, pad: 'x'.repeat(15 * 1024) };
    expect((await json('POST', '/v1/instances', { instance_id: 'meta-max', url: 'http://127.0.0.1:9', models: ['m'], meta })).status).toBe(200);
    expect((await json('GET', '/v1/instances/meta-max')).body.meta).toEqual(meta);
    await json('DELETE', '/v1/instances/meta-max');
  });
});

describe('names that are JavaScript object keys are ordinary names', () => {
  const names = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'];

  it('as ids, models and tags: registered, listed, read, heart-beaten, in the debug view and /metrics, deleted', async () => {
    for (const [i, id] of names.entries()) {
      const r = await json('POST', '/v1/instances', { instance_id: id, url: `http://127.0.0.1:${9100 + i}`, models: names, tags: names, meta: { constructor: 1, toString: 'x' } });
      expect([id, r.status]).toEqual([id, 200]);
    }
    expect(await ids()).toEqual(expect.arrayContaining(names));
    for (const id of names) {
      const got = await json('GET', path1(id));
      expect(got.body).toMatchObject({ instance_id: id, models: names, tags: names, meta: { constructor: 1, toString: 'x' } });
      expect((await json('POST', `${path1(id)}/heartbeat`, { qps_1m: 1 })).status).toBe(200);
    }
    // A proxy counts a request on model `constructor` and has some queued for `toString` and `constructor`.
    const proxy = new RedisLoadStore({ url: redis.url });
    await proxy.renewLease({ proxy_id: 'px-keys', inflight_http: 1, queued: { constructor: 2, toString: 1 }, draining: false, degraded: false }, 30_000);
    const slot = await proxy.acquire({ proxyId: 'px-keys', model: 'constructor', strategy: 'least_load' });
    expect(slot.kind).toBe('acquired');
    const loads = (await json('GET', '/debug/instance_loads')).body as unknown as { instances: { instance_id: string; queued_by_proxy: Record<string, number>; inflight: number }[] };
    for (const id of names) expect(loads.instances.find((i) => i.instance_id === id)?.queued_by_proxy).toEqual({ 'px-keys': 3 });
    expect(loads.instances.reduce((n, i) => n + i.inflight, 0)).toBe(1);
    expect((await json('GET', '/debug/status')).body).toMatchObject({ queued_total: 3, inflight_total: 1 });
    const metrics = await fetch(`${base}/metrics`);
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    for (const id of names) expect(text).toContain(`switchyard_instance_inflight{instance_id="${id}"}`);
    expect(text).toMatch(/^switchyard_queued_requests 3$/m);
    await proxy.close();
    for (const id of names) expect((await json('DELETE', path1(id))).status).toBe(200);
    expect(await ids()).not.toEqual(expect.arrayContaining([names[0]]));
  });
});

describe("the framework's own errors in the OpenAI shape", () => {
  const shape = { error: { message: expect.any(String), type: expect.any(String), code: expect.any(String) } };
  it.each([
    ['an unknown route', () => json('GET', '/v1/nope'), 404, 'route_not_found'],
    ['an unknown method', () => json('PUT', '/v1/instances/x', {}), 404, 'route_not_found'],
    ['bad JSON', () => raw('POST', '/v1/instances', { authorization: `Bearer ${OPS}`, 'content-type': 'application/json' }, '{"url":'), 400, 'invalid_body'],
    ['an empty JSON body on POST', () => raw('POST', '/v1/instances', { authorization: `Bearer ${OPS}`, 'content-type': 'application/json' }, ''), 400, 'invalid_body'],
    ['a path segment over 600 characters (414)', () => json('GET', `/v1/instances/${'x'.repeat(601)}`), 414, 'uri_too_long'],
    ['a malformed percent-escape', () => json('GET', '/v1/instances/a%zz'), 400, 'bad_url'],
    ['a body over 256 KiB (413)', () => json('POST', '/v1/instances', { url: 'http://127.0.0.1:9', models: ['m'], meta: { pad: 'x'.repeat(300_000) } }), 413, 'body_too_large'],
    ['a form body (415)', () => raw('POST', '/v1/instances', { authorization: `Bearer ${OPS}`, 'content-type': 'application/x-www-form-urlencoded' }, 'a=1'), 415, 'unsupported_media_type'],
  ])('%s', async (_what, call, status, code) => {
    const before = await ids();
    const r = await call();
    expect(r.status).toBe(status);
    expect(r.body).toEqual(shape);
    expect(r.body.error?.code).toBe(code);
    expect(await ids()).toEqual(before);
  });
});

describe('Redis down', () => {
  const lost = new RedisServer();
  let alone: AppProcess;
  let url = '';
  beforeAll(async () => {
    await lost.start();
    const port = await freePort();
    alone = await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: lost.url, ADMIN_TOKEN: OPS, LOG_LEVEL: 'info' }).start(port);
    url = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    await alone?.stop();
    await lost.stop();
  });

  it('every admin and debug route answers 503 store_unreachable, and the outage is logged once, without a stack', async () => {
    const call = async (method: string, p: string, body?: unknown) => {
      const res = await fetch(url + p, { method, headers: { authorization: `Bearer ${OPS}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
      return { status: res.status, body: (await res.json()) as Answer['body'] };
    };
    expect((await call('POST', '/v1/instances', { instance_id: 'before', url: 'http://127.0.0.1:9', models: ['m'] })).status).toBe(200);
    await lost.stop();
    const routes: [string, string, unknown?][] = [
      ['GET', '/v1/instances'],
      ['GET', '/v1/instances/before'],
      ['POST', '/v1/instances', { instance_id: 'during', url: 'http://127.0.0.1:9', models: ['m'] }],
      ['POST', '/v1/instances/before/heartbeat', {}],
      ['DELETE', '/v1/instances/before'],
      ['GET', '/v1/instance/list'],
      ['POST', '/v1/instance/register', { instance_id: 'during', url: 'http://127.0.0.1:9', models: ['m'] }],
      ['POST', '/v1/instance/heartbeat', { instance_id: 'before' }],
      ['POST', '/v1/instance/unregister', { instance_id: 'before' }],
      ['GET', '/debug/instance_loads'],
      ['GET', '/debug/status'],
    ];
    for (const [method, p, body] of routes) {
      const r = await call(method, p, body);
      expect([method, p, r.status, r.body.error?.type, r.body.error?.code]).toEqual([method, p, 503, 'service_unavailable', 'store_unreachable']);
    }
    const lines = alone.output.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; msg: string; err?: unknown });
    expect(lines.filter((l) => /^store unreachable: admin and debug routes answer 503/.test(l.msg))).toHaveLength(1);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(alone.output).not.toMatch(/\n\s+at /);
    await lost.start(lost.port);
    expect(await waitFor(async () => (await call('GET', '/v1/instances')).status === 200, 20_000, 200)).toBe(true);
    expect(await waitFor(() => alone.output.includes('store reachable again'), 5000)).toBe(true);
  });
});
