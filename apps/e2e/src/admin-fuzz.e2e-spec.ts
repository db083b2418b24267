import fc from 'fast-check';
import { freePort, RedisServer } from '@switchyard/testing';
import { AppProcess } from './processes';

// Property-based: generated registration bodies, raw bodies and ids against a real control plane
// process on a real Redis. Whatever comes in: never a 5xx, every 4xx in the OpenAI error shape,
// a refused call changes nothing, and an accepted registration can be read, heart-beaten and
// deleted through its id.
jest.setTimeout(240_000);

const TOKEN = 'fuzz-admin-token-0123456789';
const redis = new RedisServer();
let cp: AppProcess;
let base = '';

interface Reply {
  status: number;
  body: unknown;
}

async function send(method: string, path: string, init: { body?: string; type?: string } = {}): Promise<Reply> {
  const headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` };
  if (init.type) headers['content-type'] = init.type;
  const res = await fetch(base + path, { method, headers, body: init.body });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Left as text: the shape check below then fails with what came back.
  }
  return { status: res.status, body };
}

/** What a registration stores; liveness and load move on their own. */
async function registry(): Promise<string> {
  const r = await send('GET', '/v1/instances?include_dead=true');
  expect(r.status).toBe(200);
  const list = (r.body as { instances: Record<string, unknown>[] }).instances;
  return JSON.stringify(list.map(({ instance_id, url, models, endpoints, tags, weight, max_inflight, meta }) => ({ instance_id, url, models, endpoints, tags, weight, max_inflight, meta })));
}

function expectSane(what: string, r: Reply): void {
  expect([what, r.status < 500]).toEqual([what, true]);
  if (r.status >= 400) {
    const error = (r.body as { error?: Record<string, unknown> })?.error;
    expect([what, typeof error?.message, typeof error?.type, error?.code === null || typeof error?.code === 'string']).toEqual([what, 'string', 'string', true]);
  }
}

const objectKeys = fc.constantFrom('constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'prototype');
const idChars = fc.constantFrom(...'abcXYZ019_.:@-[]'.split(''));
const validId = fc.oneof(fc.string({ unit: idChars, minLength: 1, maxLength: 200 }), objectKeys);
const anyString = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary-ascii', maxLength: 40 }),
  fc.string({ unit: idChars, minLength: 190, maxLength: 300 }),
);
const junk = fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.array(fc.integer(), { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }));

const goodUrl = fc
  .tuple(fc.constantFrom('http', 'https'), fc.constantFrom('127.0.0.1', 'localhost', '[::1]', 'gpu-1.fuzz.invalid'), fc.integer({ min: 1, max: 65535 }), fc.constantFrom('', '/', '/v1', '/team-a/'))
  .map(([scheme, host, port, path]) => `${scheme}://${host}:${port}${path}`);
const url = fc.oneof(
  goodUrl,
  goodUrl.chain((u) => fc.constantFrom(`${u}?`, `${u}#`, `${u}?a=1`, u.replace('://', '://user:pw@'), `${u} x`, u.replace(/^https?/, 'ftp'))),
  anyString,
  junk,
);
const name = fc.oneof(fc.string({ unit: fc.constantFrom(...'abz09_.:@/+=~-'.split('')), minLength: 1, maxLength: 30 }), objectKeys, anyString);
const nested: fc.Arbitrary<unknown> = fc.letrec((tie) => ({ node: fc.oneof({ depthSize: 'small' }, fc.jsonValue({ maxDepth: 2 }), fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), objectKeys), tie('node'), { maxKeys: 3 })) })).node;

const validName = fc.oneof(fc.string({ unit: fc.constantFrom(...'abz09_.:@/+=~-'.split('')), minLength: 1, maxLength: 30 }), objectKeys);
const smallMeta = fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }).filter((k) => k !== '__proto__'), objectKeys.filter((k) => k !== '__proto__')), nested, { maxKeys: 4 });

/** Registrations the rules accept (most of them; a nested meta can still be too deep). */
const validRegistration = fc.oneof(
  fc.record(
    {
      instance_id: validId,
      url: goodUrl,
      models: fc.array(validName, { minLength: 1, maxLength: 4 }),
      endpoints: fc.uniqueArray(fc.constantFrom('/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/rerank', '/rerank', '/v1/audio/transcriptions'), { minLength: 1, maxLength: 3 }),
      tags: fc.array(validName, { maxLength: 3 }),
      weight: fc.double({ min: 0.001, max: 1000, noNaN: true }),
      max_inflight: fc.integer({ min: 1, max: 1_000_000 }),
      meta: smallMeta,
    },
    { requiredKeys: ['url', 'models'] },
  ),
  fc.record({ host: fc.constantFrom('127.0.0.1', '10.1.2.3', 'gpu-3.fuzz.invalid'), port: fc.integer({ min: 1, max: 65535 }), models: fc.array(validName, { minLength: 1, maxLength: 2 }) }),
);

// Up to 300 levels: fast-check prints a counterexample recursively (the 4,100-level body is a named case in admin-edge).
const deepMeta = fc.integer({ min: 9, max: 300 }).map((depth) => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
});
const badValue = fc.oneof(junk, anyString, url, fc.array(anyString, { maxLength: 3 }), fc.array(junk, { maxLength: 2 }), deepMeta, fc.constant({ pad: 'x'.repeat(20_000) }));
const fields = ['instance_id', 'url', 'host', 'port', 'models', 'endpoints', 'tags', 'weight', 'max_inflight', 'meta', 'probe', 'colour'] as const;

/** A valid registration with one field replaced (or added) by something else. */
const mutatedRegistration = fc.tuple(validRegistration, fc.constantFrom(...fields), badValue).map(([reg, field, value]) => ({ ...reg, [field]: value }));

const anyRegistration = fc.record(
  {
    instance_id: fc.oneof(validId, anyString, junk),
    url,
    host: fc.oneof(fc.constantFrom('127.0.0.1', '::1', 'gpu-2.fuzz.invalid'), anyString),
    port: fc.oneof(fc.integer({ min: 1, max: 65535 }), fc.integer(), junk),
    models: fc.oneof(fc.array(name, { minLength: 1, maxLength: 4 }), fc.constant([]), junk),
    endpoints: fc.oneof(fc.array(fc.constantFrom('/v1/chat/completions', '/v1/embeddings', '/rerank', 'v1/x', '/v1/../x', '/v1/x?y', ''), { maxLength: 3 }), junk),
    tags: fc.oneof(fc.array(name, { maxLength: 3 }), junk),
    weight: fc.oneof(fc.double({ min: -10, max: 2000, noNaN: true }), junk),
    max_inflight: fc.oneof(fc.integer({ min: -5, max: 2_000_000 }), junk),
    meta: fc.oneof(smallMeta, junk),
  },
  { requiredKeys: [] },
);

const registration = fc.oneof({ arbitrary: validRegistration, weight: 2 }, { arbitrary: mutatedRegistration, weight: 3 }, { arbitrary: anyRegistration, weight: 1 });

beforeAll(async () => {
  await redis.start();
  const port = await freePort();
  cp = await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: redis.url, ADMIN_TOKEN: TOKEN, LOG_LEVEL: 'warn', PROBE_INTERVAL_S: '3600' }).start(port);
  base = `http://127.0.0.1:${port}`;
  // A standing instance whose record must survive every refused call unchanged.
  const seeded = await send('POST', '/v1/instances', { type: 'application/json', body: JSON.stringify({ instance_id: 'seed-fixed-0', url: 'http://127.0.0.1:9', models: ['constructor', 'm'], meta: { toString: 1 } }) });
  expect(seeded.status).toBe(200);
});

afterAll(async () => {
  await cp?.stop();
  await redis.stop();
});

describe('fuzzed admin input against a real control plane', () => {
  it('registrations: no 5xx, the error shape, nothing changed when refused, read/heartbeat/delete when accepted', async () => {
    let accepted = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(registration, fc.constantFrom('/v1/instances', '/v1/instance/register'), async (body, route) => {
        const before = await registry();
        const text = JSON.stringify(body);
        const r = await send('POST', route, { type: 'application/json', body: text });
        expectSane(text.slice(0, 300), r);
        if (r.status !== 200) {
          refused++;
          expect(await registry()).toBe(before);
          return;
        }
        accepted++;
        const id = (r.body as { instance_id: string }).instance_id;
        const path = `/v1/instances/${encodeURIComponent(id)}`;
        const got = await send('GET', path);
        expect([id, got.status]).toEqual([id, 200]);
        expect((got.body as { instance_id: string }).instance_id).toBe(id);
        expect([id, (await send('POST', `${path}/heartbeat`, { type: 'application/json', body: '{}' })).status]).toEqual([id, 200]);
        expect([id, (await send('DELETE', path, { type: 'application/json' })).status]).toEqual([id, 200]);
        expect(await registry()).toBe(before);
      }),
      { numRuns: 300 },
    );
    // The generators reach both sides of the rules, or the property says little.
    expect(accepted).toBeGreaterThan(20);
    expect(refused).toBeGreaterThan(100);
  });

  it('raw bodies of any content type: no 5xx, the error shape, nothing changed', async () => {
    const before = await registry();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('POST /v1/instances', 'POST /v1/instance/register', 'POST /v1/instance/heartbeat', 'POST /v1/instance/unregister', 'POST /v1/instances/seed-fixed-0/heartbeat'),
        fc.constantFrom(undefined, 'application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml'),
        fc.oneof(fc.string({ unit: 'binary-ascii', maxLength: 200 }), fc.json({ maxDepth: 3 }), fc.constant(''), fc.constant('{"instance_id":"fz-raw","url":"http://127.0.0.1:1","models":["x"]}')),
        async (call, type, body) => {
          const [method, path] = call.split(' ');
          const r = await send(method, path, { type, body });
          expectSane(`${call} ${type} ${body.slice(0, 100)}`, r);
          // The one valid registration among these bodies is accepted only as JSON on a register route; then it is removed again.
          if (r.status === 200 && body.includes('fz-raw') && (path === '/v1/instances' || path.endsWith('register'))) {
            expect(type?.startsWith('application/json')).toBe(true);
            expect((await send('DELETE', '/v1/instances/fz-raw')).status).toBe(200);
          }
          expect(await registry()).toBe(before);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('client API keys: no 5xx, the error shape, nothing stored when refused; an accepted key reads back without its secret and revokes', async () => {
    const keys = async () => JSON.stringify(((await send('GET', '/v1/keys')).body as { keys: { id: string }[] }).keys.map((k) => k.id).sort());
    const before = await keys();
    const keyBody = fc.oneof(
      fc.record({ name: fc.oneof(validName, anyString, junk), models: fc.oneof(fc.array(fc.oneof(validName, anyString), { maxLength: 3 }), junk), rpm: fc.oneof(fc.integer({ min: -2, max: 2_000_000 }), junk), tpm: fc.oneof(fc.integer({ min: -2, max: 2_000_000_000 }), junk), key: anyString }, { requiredKeys: [] }),
      fc.record({ name: validName, models: fc.array(validName, { minLength: 1, maxLength: 3 }), rpm: fc.integer({ min: 1, max: 100_000 }), tpm: fc.integer({ min: 1, max: 10_000_000 }) }, { requiredKeys: ['name'] }),
    );
    let accepted = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(keyBody, async (body) => {
        const text = JSON.stringify(body);
        const r = await send('POST', '/v1/keys', { type: 'application/json', body: text });
        expectSane(text.slice(0, 300), r);
        if (r.status !== 201) {
          refused++;
          expect(await keys()).toBe(before);
          return;
        }
        accepted++;
        const { id, key } = r.body as { id: string; key: string };
        const got = await send('GET', `/v1/keys/${encodeURIComponent(id)}`);
        expect([id, got.status]).toEqual([id, 200]);
        expect(JSON.stringify(got.body)).not.toContain(key);
        expect([id, (await send('DELETE', `/v1/keys/${encodeURIComponent(id)}`, { type: 'application/json' })).status]).toEqual([id, 200]);
        expect(await keys()).toBe(before);
      }),
      { numRuns: 150 },
    );
    expect(accepted).toBeGreaterThan(10);
    expect(refused).toBeGreaterThan(30);
    // Ids in paths that name no key: never a 5xx, never a change.
    await fc.assert(
      fc.asyncProperty(fc.oneof(validId, fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 80 })), async (raw) => {
        const segment = encodeURIComponent(raw);
        for (const method of ['GET', 'DELETE']) {
          const r = await send(method, `/v1/keys/${segment}`);
          expectSane(`${method} /v1/keys/${segment.slice(0, 80)}`, r);
          expect(r.status).not.toBe(200);
        }
        expect(await keys()).toBe(before);
      }),
      { numRuns: 100 },
    );
  });

  it('ids in paths: no 5xx, the error shape, nothing changed for ids that are not registered', async () => {
    const before = await registry();
    const id = fc.oneof(validId, fc.string({ unit: 'grapheme', minLength: 1, maxLength: 60 }), fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 60 }), fc.string({ unit: idChars, minLength: 195, maxLength: 700 }));
    await fc.assert(
      fc.asyncProperty(id, fc.boolean(), async (raw, encode) => {
        if (raw === 'seed-fixed-0') return;
        // Raw: the path as a client would type it, percent-encoded by URL parsing only where it must be.
        const segment = encode ? encodeURIComponent(raw) : raw.replace(/[/?#%\\]/g, encodeURIComponent);
        for (const [method, suffix, type, body] of [
          ['GET', '', undefined, undefined],
          ['POST', '/heartbeat', 'application/json', '{"qps_1m":1}'],
          ['DELETE', '', 'application/json', undefined],
        ] as const) {
          const r = await send(method, `/v1/instances/${segment}${suffix}`, { type, body });
          expectSane(`${method} ${segment.slice(0, 80)}${suffix}`, r);
          expect(r.status).not.toBe(200);
        }
        expect(await registry()).toBe(before);
      }),
      { numRuns: 200 },
    );
  });
});
