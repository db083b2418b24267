import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { hashSecret, keyStoreFor, KeyPut, KeyStore, RedisLoadStore } from '@switchyard/load-store';
import { RedisServer, waitFor } from '@switchyard/testing';
import { estimateTokens, formatReset } from './keys';
import { loadProxyConfig } from './proxy-config';
import { createProxyApp, ProxyApp } from './shell/create-proxy-app';

const redis = new RedisServer();
let hits = 0;
const upstream = http.createServer((req, res) => {
  hits += 1;
  req.resume();
  req.on('end', () => {
    const data = JSON.stringify({ id: 'x', object: 'chat.completion', choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) });
    res.end(data);
  });
});
let store: RedisLoadStore;
let keys: KeyStore;
let proxy: ProxyApp;
let base = '';
let logs: string[] = [];
let pool = 0;
let n = 0;

async function startProxy(env: Record<string, string> = { API_KEYS: 'required' }) {
  store = new RedisLoadStore({ url: redis.url, pool: `k${++pool}`, commandTimeoutMs: 300, autoPipelining: true });
  keys = keyStoreFor(store);
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  await store.register({ instance_id: 'u', url, models: ['m', 'other'], endpoints: [], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 600 });
  const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(line) });
  proxy = await createProxyApp(loadProxyConfig({ LOG_LEVEL: 'info', DRAIN_SETTLE_S: '0', DRAIN_TIMEOUT_S: '0.3', ...env }), store, { logger });
  await proxy.listen(0, '127.0.0.1');
  base = `http://127.0.0.1:${(proxy.app.getHttpServer().address() as AddressInfo).port}`;
}

async function addKey(limits: Partial<Pick<KeyPut, 'models' | 'rpm' | 'tpm'>> = {}): Promise<{ secret: string; id: string }> {
  const secret = `sk-sy-spec-${++n}-${Math.random().toString(36).slice(2)}`;
  const id = `key_spec${n}`;
  await keys.put({ id, name: `spec${n}`, prefix: secret.slice(0, 10), sha256: hashSecret(secret), models: null, rpm: null, tpm: null, source: 'api', ...limits });
  return { secret, id };
}

const post = (headers: Record<string, string>, body: Record<string, unknown> = { model: 'm', max_tokens: 4 }) =>
  fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });
const error = async (res: Response) => ((await res.json()) as { error: Record<string, unknown> }).error;

beforeAll(async () => {
  await redis.start();
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
  await redis.stop();
});
beforeEach(async () => {
  logs = [];
  hits = 0;
  await startProxy();
});
afterEach(async () => {
  await proxy.close().catch(() => undefined);
  await store.close();
});

describe('client API keys at the proxy (API_KEYS=required)', () => {
  it('refuses a request without a key, or with an unknown one, with 401 invalid_api_key, before any instance sees it', async () => {
    const none = await post({});
    expect(none.status).toBe(401);
    expect(await error(none)).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key' });
    const wrong = await post(bearer('sk-sy-not-a-key-at-all-0000'));
    expect(wrong.status).toBe(401);
    expect((await error(wrong)).message).toMatch(/^Incorrect API key provided: sk-sy-\*{8}0000\./);
    expect(hits).toBe(0);
  });

  it('admits a known key from Authorization (any scheme case) or x-api-key, with x-ratelimit headers', async () => {
    const { secret } = await addKey({ rpm: 5, tpm: 1000 });
    const res = await post({ authorization: `bearer ${secret}` });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-limit-requests')).toBe('5');
    expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('4');
    expect(res.headers.get('x-ratelimit-reset-requests')).toMatch(/^\d+(\.\d+)?s$/);
    expect(res.headers.get('x-ratelimit-limit-tokens')).toBe('1000');
    expect((await post({ 'x-api-key': secret })).status).toBe(200);
    expect(hits).toBe(2);
  });

  it('refuses a model the key may not use with 403 model_not_allowed naming model', async () => {
    const { secret } = await addKey({ models: ['m'] });
    expect((await post(bearer(secret))).status).toBe(200);
    const res = await post(bearer(secret), { model: 'other' });
    expect(res.status).toBe(403);
    expect(await error(res)).toMatchObject({ code: 'model_not_allowed', param: 'model' });
  });

  it('answers 429 with Retry-After once rpm requests were admitted', async () => {
    const { secret } = await addKey({ rpm: 2 });
    expect((await post(bearer(secret))).status).toBe(200);
    expect((await post(bearer(secret))).status).toBe(200);
    const res = await post(bearer(secret));
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(await error(res)).toMatchObject({ code: 'rate_limit_exceeded' });
    expect(hits).toBe(2);
  });

  it("corrects the token estimate with the answer's usage at the exchange's end", async () => {
    const { secret, id } = await addKey({ tpm: 10_000 });
    // What h-obs does for every answer: the exchange's usage from the response.
    const begin = proxy.runtime.exchanges.begin.bind(proxy.runtime.exchanges);
    proxy.runtime.exchanges.begin = (req, res, onEnd) => {
      const ex = begin(req, res, onEnd);
      res.once('finish', () => (ex.usage = { prompt_tokens: 3, completion_tokens: 4 }));
      return ex;
    };
    expect((await post(bearer(secret), { model: 'm', max_tokens: 500 })).status).toBe(200);
    expect(await waitFor(async () => (await keys.get(id))?.usage.tokens === 7, 3000, 20)).toBe(true);
  });

  it('refunds the estimate of a request no instance answered', async () => {
    const { secret, id } = await addKey({ tpm: 10_000 });
    const res = await post(bearer(secret), { model: 'nobody-serves-this', max_tokens: 500 });
    expect(res.status).toBe(404);
    expect(await waitFor(async () => (await keys.get(id))?.usage.tokens === 0, 3000, 20)).toBe(true);
  });

  it('while Redis is unreachable, serves a key admitted in the last minute and refuses an unseen one with 503; the secret is never logged', async () => {
    const seen = await addKey();
    const unseen = await addKey();
    expect((await post(bearer(seen.secret))).status).toBe(200);
    redis.pause();
    try {
      expect((await post(bearer(seen.secret))).status).toBe(200);
      const res = await post(bearer(unseen.secret));
      expect(res.status).toBe(503);
      expect(await error(res)).toMatchObject({ code: 'store_unreachable' });
    } finally {
      redis.resume();
    }
    expect(logs.join('\n')).toContain('store unreachable for API keys');
    for (const s of [seen.secret, unseen.secret]) expect(logs.join('\n')).not.toContain(s);
  });

  it('with API_KEYS=off (the default) asks for no key', async () => {
    await proxy.close();
    await store.close();
    await startProxy({});
    expect((await post({})).status).toBe(200);
  });
});

describe('token estimate and reset format', () => {
  it('is prompt bytes / 4 plus max_completion_tokens, max_tokens, or the default; none for embeddings', () => {
    expect(estimateTokens('/v1/chat/completions', { max_tokens: 10 }, 40)).toBe(20);
    expect(estimateTokens('/v1/chat/completions', { max_completion_tokens: 5, max_tokens: 10 }, 4)).toBe(6);
    expect(estimateTokens('/v1/chat/completions', {}, 4)).toBe(257);
    expect(estimateTokens('/v1/embeddings', {}, 8)).toBe(2);
  });
  it('says ms, s, or m and s as OpenAI does', () => {
    expect([formatReset(20), formatReset(1500), formatReset(360_000)]).toEqual(['20ms', '1.5s', '6m0s']);
  });
});
