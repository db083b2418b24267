import OpenAI from 'openai';
import Redis from 'ioredis';
import { freePort, RedisServer, waitFor } from '@switchyard/testing';
import type { ApiKeyCreated } from '@switchyard/contracts';
import { answerJson, FakeUpstream } from './fake-upstream';
import { AppProcess } from './processes';

jest.setTimeout(120_000);

/**
 * Client API keys with real processes: a control plane and two proxies (API_KEYS=required) on one
 * Redis, the official openai client as the client. Limits hold across both proxies together;
 * a revocation reaches both within a second; the secret is stored, shown and logged nowhere.
 */
const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
const redis = new RedisServer();
const procs: AppProcess[] = [];
const proxyUrls: string[] = [];
let cpUrl = '';
let upstream: FakeUpstream;
const secrets: string[] = [];

const admin = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${cpUrl}${path}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
  return { status: res.status, text: await res.text() };
};
async function createKey(body: Record<string, unknown>): Promise<ApiKeyCreated> {
  const res = await admin('POST', '/v1/keys', body);
  expect(res.status).toBe(201);
  const created = JSON.parse(res.text) as ApiKeyCreated;
  secrets.push(created.key);
  return created;
}
const client = (proxy: number, apiKey: string) => new OpenAI({ baseURL: `${proxyUrls[proxy]}/v1`, apiKey, maxRetries: 0 });
const chat = (proxy: number, apiKey: string, model = 'fake-a') => client(proxy, apiKey).chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 10 });
const rawStatus = async (proxy: number, headers: Record<string, string>) =>
  (await fetch(`${proxyUrls[proxy]}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ model: 'fake-a', messages: [] }) })).status;

beforeAll(async () => {
  await redis.start();
  upstream = await new FakeUpstream((_req, res) =>
    answerJson(res, 200, { id: 'c', object: 'chat.completion', created: 0, model: 'fake-a', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop', logprobs: null }], usage: { prompt_tokens: 20, completion_tokens: 30, total_tokens: 50 } }),
  ).listen();
  const cpPort = await freePort();
  procs.push(await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: redis.url, ADMIN_TOKEN, LOG_LEVEL: 'debug' }).start(cpPort));
  cpUrl = `http://127.0.0.1:${cpPort}`;
  expect((await admin('POST', '/v1/instances', { url: upstream.url, models: ['fake-a', 'fake-b'], instance_id: 'fake' })).status).toBe(200);
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    procs.push(await new AppProcess('apps/proxy/src/main.ts', { REDIS_URL: redis.url, PROXY_NAME: `keys-${i}`, API_KEYS: 'required', LOG_LEVEL: 'debug' }).start(port));
    proxyUrls.push(`http://127.0.0.1:${port}`);
  }
  for (const url of proxyUrls) expect(await waitFor(async () => JSON.stringify(await (await fetch(`${url}/v1/models`)).json()).includes('fake-a'))).toBe(true);
});

afterAll(async () => {
  for (const p of procs.reverse()) await p.stop();
  await upstream.close();
  await redis.stop();
});

describe('client API keys across two proxies', () => {
  it('refuses a request without a key, or with a made-up one, with 401 invalid_api_key on both proxies', async () => {
    for (const proxy of [0, 1]) {
      expect(await rawStatus(proxy, {})).toBe(401);
      const err = await chat(proxy, 'sk-sy-made-up-key-00000000000000').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
      expect((err as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('invalid_api_key');
    }
    expect(upstream.hits).toBe(0);
  });

  it('a key limited to 10 requests a minute: the 11th across both proxies gets 429 with Retry-After (RateLimitError)', async () => {
    const { key } = await createKey({ name: 'ten-a-minute', rpm: 10 });
    for (let i = 0; i < 10; i++) {
      const { data, response } = await chat(i % 2, key).withResponse();
      expect(data.choices[0].message.content).toBe('ok');
      expect(response.headers.get('x-ratelimit-limit-requests')).toBe('10');
      expect(response.headers.get('x-ratelimit-remaining-requests')).toBe(String(9 - i));
    }
    for (const proxy of [0, 1]) {
      const err = await chat(proxy, key).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.RateLimitError);
      const e = err as InstanceType<typeof OpenAI.RateLimitError>;
      expect(e.code).toBe('rate_limit_exceeded');
      expect(Number(e.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(e.headers?.get('x-ratelimit-remaining-requests')).toBe('0');
      expect(e.headers?.get('x-ratelimit-reset-requests')).toMatch(/^\d+(\.\d+)?s$|^\d+ms$/);
    }
  });

  it('a key limited to model fake-a gets 403 model_not_allowed for fake-b', async () => {
    const { key } = await createKey({ name: 'only-a', models: ['fake-a'] });
    expect((await chat(0, key, 'fake-a')).choices[0].message.content).toBe('ok');
    const err = await chat(1, key, 'fake-b').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((err as InstanceType<typeof OpenAI.PermissionDeniedError>).code).toBe('model_not_allowed');
    expect((err as InstanceType<typeof OpenAI.PermissionDeniedError>).param).toBe('model');
  });

  it('a key with a small tpm gets 429 once the tokens recorded exceed it', async () => {
    const { key, id } = await createKey({ name: 'small-tpm', tpm: 100 });
    let ok = 0;
    let limited: InstanceType<typeof OpenAI.RateLimitError> | undefined;
    for (let i = 0; i < 10 && !limited; i++) {
      try {
        await chat(i % 2, key);
        ok += 1;
      } catch (err) {
        if (!(err instanceof OpenAI.RateLimitError)) throw err;
        limited = err;
      }
    }
    expect(ok).toBeGreaterThanOrEqual(1);
    expect(limited?.headers?.get('x-ratelimit-limit-tokens')).toBe('100');
    expect(limited?.message).toContain('tokens per min (TPM)');
    const view = JSON.parse((await admin('GET', `/v1/keys/${id}`)).text) as ApiKeyCreated;
    expect(view.usage.tokens).toBeGreaterThan(0);
    expect(view.usage.remaining_tokens).toBeLessThan(100);
  });

  it('revoking a key through the admin API makes both proxies answer 401 within 1 s', async () => {
    const { key, id } = await createKey({ name: 'to-revoke' });
    for (const proxy of [0, 1]) expect((await chat(proxy, key)).choices[0].message.content).toBe('ok');
    expect((await admin('DELETE', `/v1/keys/${id}`)).status).toBe(200);
    const both401 = async () => (await rawStatus(0, { authorization: `Bearer ${key}` })) === 401 && (await rawStatus(1, { authorization: `Bearer ${key}` })) === 401;
    expect(await waitFor(both401, 1000, 20)).toBe(true);
  });

  it('never stores, shows or logs a secret: not in Redis, not in any read route, not in any process output', async () => {
    expect(secrets.length).toBeGreaterThanOrEqual(4);
    const r = new Redis(redis.url);
    try {
      const names = await r.keys('*');
      let dump = names.join('\n');
      for (const name of names) {
        const type = await r.type(name);
        if (type === 'hash') dump += JSON.stringify(await r.hgetall(name));
        else if (type === 'string') dump += String(await r.get(name));
        else if (type === 'set') dump += JSON.stringify(await r.smembers(name));
        else if (type === 'zset') dump += JSON.stringify(await r.zrange(name, '0', '-1'));
      }
      for (const s of secrets) expect(dump).not.toContain(s);
    } finally {
      r.disconnect();
    }
    const reads = (await Promise.all(['/v1/keys', '/debug/keys', '/debug/instance_loads', '/debug/status', '/metrics'].map((p) => admin('GET', p)))).map((x) => x.text).join('\n');
    expect(reads).toContain('ten-a-minute');
    const output = procs.map((p) => p.output).join('\n');
    for (const s of secrets) {
      expect(reads).not.toContain(s);
      expect(output).not.toContain(s);
    }
  });
});
