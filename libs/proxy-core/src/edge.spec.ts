import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import type { InstanceRecord } from '@switchyard/contracts';
import { MemoryLoadStore } from '@switchyard/load-store';
import { loadProxyConfig } from './proxy-config';
import { createProxyApp, ProxyApp } from './shell/create-proxy-app';

/** An in-process instance recording what reached it: path and headers of each request. */
class Upstream {
  seen: { path: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
  readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.seen.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const data = JSON.stringify(req.url?.startsWith('/v1/audio/') ? { text: 'hello' } : { ok: true });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), 'set-cookie': 'engine=1' });
      res.end(data);
    });
  });
  get url() {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
}

const rec = (id: string, url: string, extra: Partial<InstanceRecord> = {}) => ({ instance_id: id, url, models: ['m'], endpoints: ['/v1/chat/completions'], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 60, ...extra });

const ups = [new Upstream(), new Upstream()];
let proxy: ProxyApp | undefined;
let base = '';
let logs: Record<string, unknown>[] = [];

async function start(env: Record<string, string>, records: ReturnType<typeof rec>[]) {
  const store = new MemoryLoadStore();
  for (const r of records) await store.register(r);
  logs = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  proxy = await createProxyApp(loadProxyConfig({ DRAIN_SETTLE_S: '0', DRAIN_TIMEOUT_S: '0.3', ...env }), store, { logger });
  await proxy.listen(0, '127.0.0.1');
  base = `http://127.0.0.1:${(proxy.app.getHttpServer().address() as AddressInfo).port}`;
  for (const u of ups) u.seen = [];
}

const chat = (headers: Record<string, string> = {}, path = '/v1/chat/completions', body: unknown = { model: 'm', messages: [] }) =>
  fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

beforeAll(async () => {
  for (const u of ups) await new Promise<void>((r) => u.server.listen(0, '127.0.0.1', r));
});
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
});
afterAll(async () => {
  for (const u of ups) await new Promise((r) => u.server.close(r));
});

describe('client credentials (FORWARD_CLIENT_AUTH)', () => {
  it('keeps Authorization, Cookie, Proxy-Authorization and x-api-key from instances by default, and their Set-Cookie from clients', async () => {
    await start({}, [rec('a', ups[0].url)]);
    const res = await chat({ authorization: 'Bearer client-secret', cookie: 'sid=1', 'proxy-authorization': 'Basic x', 'x-api-key': 'k', 'x-custom': 'kept' });
    expect(res.status).toBe(200);
    expect(res.headers.get('set-cookie')).toBeNull();
    const h = ups[0].seen[0].headers;
    expect([h.authorization, h.cookie, h['proxy-authorization'], h['x-api-key']]).toEqual([undefined, undefined, undefined, undefined]);
    expect(h['x-custom']).toBe('kept');
  });

  it('forwards Authorization and Cookie when FORWARD_CLIENT_AUTH=true, never x-api-key', async () => {
    await start({ FORWARD_CLIENT_AUTH: 'true' }, [rec('a', ups[0].url)]);
    const res = await chat({ authorization: 'Bearer client-secret', cookie: 'sid=1', 'x-api-key': 'k' });
    expect(res.headers.get('set-cookie')).toBe('engine=1');
    const h = ups[0].seen[0].headers;
    expect([h.authorization, h.cookie, h['x-api-key']]).toEqual(['Bearer client-secret', 'sid=1', undefined]);
  });

  it("sends an instance's own api_key as Bearer, replacing the client's, and only to that instance", async () => {
    await start({ FORWARD_CLIENT_AUTH: 'true' }, [rec('a', ups[0].url, { api_key: 'sk-instance-a' }), rec('b', ups[1].url)]);
    for (let i = 0; i < 4; i++) expect((await chat({ authorization: 'Bearer client-secret' })).status).toBe(200);
    expect(ups[0].seen.map((s) => s.headers.authorization)).toEqual(ups[0].seen.map(() => 'Bearer sk-instance-a'));
    expect(ups[1].seen.map((s) => s.headers.authorization)).toEqual(ups[1].seen.map(() => 'Bearer client-secret'));
    expect(ups[0].seen.length).toBeGreaterThan(0);
    expect(JSON.stringify(logs)).not.toContain('sk-instance-a');
  });

  it('sends the key of an instance registered since the last registry pull (the store picks it before the proxy heard of it)', async () => {
    await start({ REGISTRY_RESYNC_S: '3600' }, []);
    await proxy!.runtime.store.register(rec('new', ups[0].url, { api_key: 'sk-new' }));
    expect((await chat({ authorization: 'Bearer client-secret' })).status).toBe(200);
    expect(ups[0].seen.map((s) => s.headers.authorization)).toEqual(['Bearer sk-new']);
  });

  it('does not send a route to an instance registered since the last pull that does not list it', async () => {
    await start({ REGISTRY_RESYNC_S: '3600' }, [rec('reranker', ups[1].url, { endpoints: ['/v1/rerank'] })]);
    await proxy!.runtime.store.register(rec('chat-only', ups[0].url));
    for (let i = 0; i < 4; i++) expect((await chat({}, '/v1/rerank', { model: 'm', query: 'q', documents: [] })).status).toBe(200);
    expect(ups[0].seen).toHaveLength(0);
    expect(ups[1].seen).toHaveLength(4);
  });
});

describe('loop detection (via)', () => {
  it('adds its via entry upstream, after the one the request carried', async () => {
    await start({}, [rec('a', ups[0].url)]);
    await chat({ via: '1.1 edge-lb' });
    expect(ups[0].seen[0].headers.via).toBe('1.1 edge-lb, 1.1 switchyard');
  });

  it('answers 508 in the OpenAI shape to a request that already passed a Switchyard proxy, contacting no instance', async () => {
    await start({}, [rec('a', ups[0].url)]);
    const res = await chat({ via: '1.0 other, 1.1 switchyard' });
    expect(res.status).toBe(508);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('loop_detected');
    expect(ups[0].seen).toHaveLength(0);
  });

  it('stops a loop through an instance URL pointing back at the proxy after one round', async () => {
    await start({}, []);
    await proxy!.runtime.store.register(rec('self', base));
    await proxy!.runtime.pullRegistry();
    const res = await chat();
    expect(res.status).toBe(508);
    expect(logs.filter((l) => l.msg === 'request')).toHaveLength(2);
  });
});

describe('endpoints', () => {
  it('sends a route only to instances listing it, and 404s naming route and model when none does', async () => {
    await start({}, [rec('chat-only', ups[0].url), rec('reranker', ups[1].url, { endpoints: ['/v1/chat/completions', '/v1/rerank'] })]);
    for (let i = 0; i < 4; i++) expect((await chat({}, '/v1/rerank', { model: 'm', query: 'q', documents: ['d'] })).status).toBe(200);
    expect(ups[0].seen).toHaveLength(0);
    expect(ups[1].seen.map((s) => s.path)).toEqual(Array(4).fill('/v1/rerank'));
    const res = await chat({}, '/v1/score', { model: 'm', text_1: 'a', text_2: 'b' });
    expect(res.status).toBe(404);
    const body = (await res.json()) as { error: { message: string; code: string } };
    expect(body.error.code).toBe('route_not_served');
    expect(body.error.message).toContain('/v1/score');
    expect(body.error.message).toContain("'m'");
  });

  it('reads the model of a multipart audio request from its form field', async () => {
    await start({}, [rec('asr', ups[0].url, { models: ['whisper'], endpoints: ['/v1/audio/transcriptions'] })]);
    const form = new FormData();
    form.append('file', new Blob([Buffer.from('RIFF....WAVEfmt ')], { type: 'audio/wav' }), 'a.wav');
    form.append('model', 'whisper');
    const res = await fetch(`${base}/v1/audio/transcriptions`, { method: 'POST', body: form });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ text: 'hello' });
    expect(ups[0].seen[0].headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    const missing = new FormData();
    missing.append('file', new Blob([Buffer.from('x')]), 'a.wav');
    const bad = await fetch(`${base}/v1/audio/transcriptions`, { method: 'POST', body: missing });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe('model');
  });
});

describe('/v1/models', () => {
  it('retrieves one model by an id with slashes, with the smallest max_model_len reported, and 404s an unknown one', async () => {
    const id = 'meta-llama/Llama-3.1-8B-Instruct';
    await start({}, [
      rec('a', ups[0].url, { models: [id], model_info: { [id]: { max_model_len: 8192, owned_by: 'vllm' } } }),
      rec('b', ups[1].url, { models: [id], model_info: { [id]: { max_model_len: 4096, owned_by: 'vllm' } } }),
    ]);
    const one = await fetch(`${base}/v1/models/${encodeURIComponent(id)}`);
    expect(one.status).toBe(200);
    expect(await one.json()).toEqual({ id, object: 'model', created: 0, owned_by: 'vllm', max_model_len: 4096 });
    expect((await fetch(`${base}/v1/models/${id}`)).status).toBe(200);
    const list = (await (await fetch(`${base}/v1/models`)).json()) as { data: { id: string; max_model_len?: number }[] };
    expect(list.data).toEqual([{ id, object: 'model', created: 0, owned_by: 'vllm', max_model_len: 4096 }]);
    const unknown = await fetch(`${base}/v1/models/nope`);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('model_not_found');
  });
});

describe('CORS', () => {
  it('answers an allowed preflight with 204 and its allowances, refuses another origin, and marks actual answers', async () => {
    await start({ CORS_ORIGINS: 'https://app.example' }, [rec('a', ups[0].url)]);
    const pre = await fetch(`${base}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' } });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(pre.headers.get('access-control-allow-headers')).toBe('authorization, content-type');
    expect(pre.headers.get('access-control-max-age')).toBe('600');
    const refused = await fetch(`${base}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    expect(ups[0].seen).toHaveLength(0);
    expect(proxy!.runtime.slots.total).toBe(0);
    const actual = await chat({ origin: 'https://app.example' });
    expect(actual.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(actual.headers.get('vary')).toContain('origin');
    const models = await fetch(`${base}/v1/models`, { headers: { origin: 'https://app.example' } });
    expect(models.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect((await chat({ origin: 'https://evil.example' })).headers.get('access-control-allow-origin')).toBeNull();
  });

  it('adds nothing when CORS_ORIGINS is unset', async () => {
    await start({}, [rec('a', ups[0].url)]);
    const pre = await fetch(`${base}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' } });
    expect(pre.status).toBe(404);
    expect((await chat({ origin: 'https://app.example' })).headers.get('access-control-allow-origin')).toBeNull();
  });
});
