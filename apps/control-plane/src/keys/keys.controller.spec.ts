import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { ApiKeyCreated, ApiKeyView } from '@switchyard/contracts';
import { hashSecret, keyStoreFor, RedisLoadStore } from '@switchyard/load-store';
import { RedisServer, waitFor } from '@switchyard/testing';
import { createControlPlane } from '../bootstrap';
import { loadControlPlaneConfig } from '../config';

/** The wired app over Fastify's inject, on a real Redis: guard and roles, validation, the secret shown once, 503 while the store is down. */
const redis = new RedisServer();
let app: NestFastifyApplication;
let store: RedisLoadStore;
const ADMIN = { authorization: 'Bearer admin-token-0123456789' };
const READ = { authorization: 'Bearer read-token-0123456789' };
const DECLARED_SECRET = 'sk-declared-in-the-file-0001';

const send = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown, headers: Record<string, string> = ADMIN) =>
  app.inject({ method, url, headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' }, payload: body === undefined ? undefined : JSON.stringify(body) });
const listIds = async () => ((await send('GET', '/v1/keys')).json() as { keys: ApiKeyView[] }).keys.map((k) => k.id);

beforeAll(async () => {
  await redis.start();
  store = new RedisLoadStore({ url: redis.url, commandTimeoutMs: 500 });
  const config = loadControlPlaneConfig({ ADMIN_TOKENS: 'ops:admin:admin-token-0123456789,viewer:read:read-token-0123456789' });
  app = await createControlPlane(config, store, false, [], [
    { name: 'from-file', key: DECLARED_SECRET, models: ['m'], rpm: 60 },
    { name: 'hashed', key_sha256: hashSecret('sk-only-the-hash-is-in-the-file') },
  ]);
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
});
afterAll(async () => {
  await app.close();
  await store.close();
  await redis.stop();
});

describe('/v1/keys', () => {
  it('writes the config file keys at start, as cfg_<name>, with a prefix but never the secret', async () => {
    expect(await waitFor(async () => (await listIds()).includes('cfg_hashed'), 5000)).toBe(true);
    const keys = ((await send('GET', '/v1/keys', undefined, READ)).json() as { keys: ApiKeyView[] }).keys;
    expect(keys.find((k) => k.id === 'cfg_from-file')).toMatchObject({ name: 'from-file', source: 'config', models: ['m'], rpm: 60, tpm: null, prefix: DECLARED_SECRET.slice(0, 10) });
    expect(keys.find((k) => k.id === 'cfg_hashed')?.prefix).toMatch(/^sha256:[0-9a-f]{8}$/);
    expect(JSON.stringify(keys)).not.toContain(DECLARED_SECRET);
    const res = await send('DELETE', '/v1/keys/cfg_from-file');
    expect(res.statusCode).toBe(409);
    expect(res.json().error).toMatchObject({ code: 'key_declared', param: 'id' });
  });

  it('creates a key (admin role), answers its secret once, and reads never show it', async () => {
    const res = await send('POST', '/v1/keys', { name: 'team-a', models: ['llama'], rpm: 10, tpm: 5000 });
    expect(res.statusCode).toBe(201);
    const created = res.json() as ApiKeyCreated;
    expect(created.key).toMatch(/^sk-sy-[A-Za-z0-9_-]{32}$/);
    expect(created).toMatchObject({ name: 'team-a', models: ['llama'], rpm: 10, tpm: 5000, source: 'api', prefix: created.key.slice(0, 10), usage: { requests: 0, tokens: 0, remaining_requests: 10, remaining_tokens: 5000 } });
    expect(created.id).toMatch(/^key_[0-9a-f]{16}$/);
    for (const url of ['/v1/keys', `/v1/keys/${created.id}`, '/debug/keys']) {
      const read = await send('GET', url, undefined, READ);
      expect(read.statusCode).toBe(200);
      expect(read.body).toContain(created.id);
      expect(read.body).not.toContain(created.key);
      expect(read.body).not.toContain(hashSecret(created.key));
    }
    // Nothing in Redis holds the secret: only its hash names the record.
    for (const name of await store.redis.keys('sy:{keys}:*')) {
      const dump = JSON.stringify((await store.redis.type(name)) === 'hash' ? await store.redis.hgetall(name) : null);
      expect(`${name} ${dump}`).not.toContain(created.key);
    }
  });

  it('revokes a key (admin role): gone from every read, and a second revoke is 404', async () => {
    const { id } = (await send('POST', '/v1/keys', { name: 'short-lived' })).json() as ApiKeyCreated;
    expect((await send('DELETE', `/v1/keys/${id}`, undefined, READ)).statusCode).toBe(403);
    const res = await send('DELETE', `/v1/keys/${id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true, id });
    expect((await send('GET', `/v1/keys/${id}`)).statusCode).toBe(404);
    expect(await listIds()).not.toContain(id);
    expect((await send('DELETE', `/v1/keys/${id}`)).json().error.code).toBe('key_not_found');
    // The proxies read the store per request: revoked there is revoked everywhere.
    expect(await keyStoreFor(store).get(id)).toBeNull();
  });

  it.each<[string, unknown, string]>([
    ['no name', { rpm: 10 }, 'name'],
    ['an empty name', { name: '' }, 'name'],
    ['a name with a space', { name: 'a b' }, 'name'],
    ['rpm 0', { name: 'x', rpm: 0 }, 'rpm'],
    ['rpm as a string', { name: 'x', rpm: '10' }, 'rpm'],
    ['a fractional tpm', { name: 'x', tpm: 1.5 }, 'tpm'],
    ['an empty model list', { name: 'x', models: [] }, 'models'],
    ['a bad model name', { name: 'x', models: ['a b'] }, 'models.0'],
    ['a key chosen by the caller', { name: 'x', key: 'sk-mine' }, 'key'],
  ])('refuses %s with 400 naming the field, and creates nothing', async (_what, body, field) => {
    const before = await listIds();
    const res = await send('POST', '/v1/keys', body);
    expect(res.statusCode).toBe(400);
    const { error } = res.json();
    expect(error).toMatchObject({ type: 'invalid_request_error' });
    expect(error.message).toContain(`${field}:`);
    expect(await listIds()).toEqual(before);
  });

  it('refuses a body that is not a JSON object, a bad id in the path, and a read token on POST', async () => {
    const before = await listIds();
    expect((await send('POST', '/v1/keys', ['name'])).statusCode).toBe(400);
    const form = await app.inject({ method: 'POST', url: '/v1/keys', headers: { ...ADMIN, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'name=x' });
    expect(form.statusCode).toBe(415);
    const badId = await send('GET', '/v1/keys/not-an-id');
    expect(badId.statusCode).toBe(400);
    expect(badId.json().error).toMatchObject({ code: 'invalid_key_id', param: 'id' });
    expect((await send('POST', '/v1/keys', { name: 'x' }, READ)).statusCode).toBe(403);
    expect((await send('POST', '/v1/keys', { name: 'x' }, {})).statusCode).toBe(401);
    expect(await listIds()).toEqual(before);
  });

  it('answers 503 store_unreachable while Redis is down', async () => {
    redis.pause();
    try {
      for (const [method, url, body] of [['GET', '/v1/keys'], ['POST', '/v1/keys', { name: 'x' }], ['GET', '/debug/keys']] as const) {
        const res = await send(method, url, body);
        expect(res.statusCode).toBe(503);
        expect(res.json().error.code).toBe('store_unreachable');
      }
    } finally {
      redis.resume();
    }
  });
});
