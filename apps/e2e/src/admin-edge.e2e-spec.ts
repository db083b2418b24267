import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, RedisServer, waitFor } from '@switchyard/testing';
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
