import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { spawn } from 'node:child_process';
import path from 'node:path';
import OpenAI, { APIError, NotFoundError, toFile } from 'openai';
import { freePort, RedisServer, waitFor } from '@switchyard/testing';
import { startFakeEngine } from './fake-engines';
import { answerJson, chatCompletion, FakeUpstream, sseChunk } from './fake-upstream';
import { AppProcess } from './processes';

jest.setTimeout(90_000);

const TTL_S = 2;
const redis = new RedisServer();
const procs: AppProcess[] = [];
const upstreams: FakeUpstream[] = [];
const beating = new Set<string>();
let beatTimer: NodeJS.Timeout;
let cpUrl = '';
let proxyUrl = '';
let client: OpenAI;

/** An OTLP/HTTP receiver (JSON): keeps every span POSTed to /v1/traces. */
type OtlpAttr = { key: string; value: { stringValue?: string; intValue?: string | number; boolValue?: boolean } };
type OtlpSpan = { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes: OtlpAttr[] };
const spans: OtlpSpan[] = [];
const otlp = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    if (req.method === 'POST' && req.url === '/v1/traces') {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
      for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
const attr = (span: OtlpSpan, key: string) => {
  const v = span.attributes.find((a) => a.key === key)?.value;
  return v?.stringValue ?? (v?.intValue !== undefined ? Number(v.intValue) : v?.boolValue);
};


type Inst = { instance_id: string; alive: boolean; load: { inflight: number } };
const instances = async (): Promise<Inst[]> => ((await (await fetch(`${cpUrl}/v1/instances?include_expired=true`)).json()) as { instances: Inst[] }).instances;
const inflightOf = async (ids: string[]) => (await instances()).filter((i) => ids.includes(i.instance_id)).reduce((s, i) => s + i.load.inflight, 0);

async function register(id: string, url: string, models: string[], keepAlive = true): Promise<void> {
  const res = await fetch(`${cpUrl}/v1/instances`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ instance_id: id, url, models }) });
  expect(res.ok).toBe(true);
  if (keepAlive) beating.add(id);
}

async function upstream(handler: ConstructorParameters<typeof FakeUpstream>[0]): Promise<FakeUpstream> {
  const u = await new FakeUpstream(handler).listen();
  upstreams.push(u);
  return u;
}

const good = (name: string) =>
  upstream((_req, res, body) => {
    if (body.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`${sseChunk(name)}data: [DONE]\n\n`);
    } else answerJson(res, 200, chatCompletion(name));
  });

async function post(model: string, extra: Record<string, unknown> = {}): Promise<Response> {
  return fetch(`${proxyUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [], ...extra }) });
}

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${proxyUrl}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(name)) sum += Number(line.split(' ').pop());
  return sum;
}

beforeAll(async () => {
  await redis.start();
  await new Promise<void>((resolve) => otlp.listen(0, '127.0.0.1', resolve));
  const otlpUrl = `http://127.0.0.1:${(otlp.address() as AddressInfo).port}`;
  const cpPort = await freePort();
  procs.push(await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: redis.url, INSTANCE_TTL_S: String(TTL_S) }).start(cpPort));
  cpUrl = `http://127.0.0.1:${cpPort}`;
  const port = await freePort();
  procs.push(await new AppProcess('apps/proxy/src/main.ts', {
        REDIS_URL: redis.url,
        PROXY_NAME: 'routing',
        FAILURE_COOLDOWN_S: '60',
        REGISTRY_RESYNC_S: '0.5',
        LOG_TIME: 'iso',
        USAGE_FROM_STREAMS: 'true',
        OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '100',
      }).start(port));
  proxyUrl = `http://127.0.0.1:${port}`;
  client = new OpenAI({ baseURL: `${proxyUrl}/v1`, apiKey: 'unused', maxRetries: 0 });
  beatTimer = setInterval(() => {
    for (const id of beating) void fetch(`${cpUrl}/v1/instances/${id}/heartbeat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).catch(() => undefined);
  }, 300);
});

afterAll(async () => {
  clearInterval(beatTimer);
  for (const p of procs.reverse()) await p.stop();
  await Promise.all(upstreams.map((u) => u.close()));
  otlp.closeAllConnections();
  await new Promise((resolve) => otlp.close(resolve));
  await redis.stop();
});

describe('proxy routing, failover and liveness', () => {
  it('retries a refused connection and a 503 on another instance, cools the dead one down, and releases every count', async () => {
    const ok = await good('ok');
    const flaky = await upstream((_req, res) => answerJson(res, 503, { error: { message: 'overloaded', type: 'server_error', code: null } }));
    const deadPort = await freePort();
    await register('fo-dead', `http://127.0.0.1:${deadPort}`, ['m-failover']);
    await register('fo-flaky', flaky.url, ['m-failover']);
    await register('fo-ok', ok.url, ['m-failover']);
    for (let i = 0; i < 8; i++) {
      const r = await client.chat.completions.create({ model: 'm-failover', messages: [{ role: 'user', content: 'hi' }] });
      expect(r.choices[0].message.content).toBe('ok');
    }
    const streamed = await client.chat.completions.create({ model: 'm-failover', messages: [], stream: true });
    let text = '';
    for await (const c of streamed) text += c.choices[0]?.delta?.content ?? '';
    expect(text).toBe('ok');
    expect(ok.hits).toBe(9);
    // The refused instance was tried once, then cooled down; the 503 one is retried past each time it is picked.
    expect(await metric('switchyard_proxy_retries_total{reason="connect"}')).toBe(1);
    expect(flaky.hits).toBeGreaterThan(0);
    expect(await metric('switchyard_proxy_retries_total{reason="status_503"}')).toBe(flaky.hits);
    expect(await waitFor(async () => (await inflightOf(['fo-dead', 'fo-flaky', 'fo-ok'])) === 0)).toBe(true);
  });

  it('answers 502 in the OpenAI shape when every instance for the model fails', async () => {
    await register('dn-dead', `http://127.0.0.1:${await freePort()}`, ['m-down']);
    const res = await post('m-down');
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: { message: string; code: string } };
    expect(body.error.code).toBe('upstream_error');
    expect(body.error.message).toMatch(/dn-dead/);
    expect(await inflightOf(['dn-dead'])).toBe(0);
  });

  it('ends a stream cut mid-way with an error event the client sees, and releases the count', async () => {
    const cutter = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sseChunk('partial'));
      setTimeout(() => res.socket?.destroy(), 50);
    });
    await register('cut-1', cutter.url, ['m-cut']);
    const stream = await client.chat.completions.create({ model: 'm-cut', messages: [], stream: true });
    let text = '';
    let error: unknown;
    try {
      for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
    } catch (err) {
      error = err;
    }
    expect(text).toBe('partial');
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).message).toMatch(/upstream failed mid-stream/);
    expect(await waitFor(async () => (await inflightOf(['cut-1'])) === 0)).toBe(true);
  });

  it('sends the next request to a newly registered instance at once', async () => {
    const hold: (() => void)[] = [];
    const slow = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sseChunk('held'));
      hold.push(() => res.end('data: [DONE]\n\n'));
    });
    await register('new-a', slow.url, ['m-new']);
    await register('new-b', slow.url.replace('127.0.0.1', 'localhost'), ['m-new']);
    const open = [await post('m-new', { stream: true }), await post('m-new', { stream: true })];
    expect(new Set(open.map((r) => r.headers.get('x-switchyard-instance')))).toEqual(new Set(['new-a', 'new-b']));
    const fresh = await good('fresh');
    await register('new-c', fresh.url, ['m-new']);
    const next = await post('m-new');
    expect(next.headers.get('x-switchyard-instance')).toBe('new-c');
    expect(await next.json()).toMatchObject({ choices: [{ message: { content: 'fresh' } }] });
    hold.forEach((end) => end());
    await Promise.all(open.map((r) => r.text()));
    expect(await waitFor(async () => (await inflightOf(['new-a', 'new-b', 'new-c'])) === 0)).toBe(true);
  });

  it('stops sending traffic to an instance after it misses heartbeats for ttl_s, and drops its model from /v1/models', async () => {
    const a = await good('a');
    const b = await good('b');
    await register('ttl-a', a.url, ['m-ttl']);
    await register('ttl-b', b.url, ['m-ttl', 'm-only-b']);
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) seen.add((await post('m-ttl')).headers.get('x-switchyard-instance') ?? '');
    expect(seen).toEqual(new Set(['ttl-a', 'ttl-b']));
    expect(await waitFor(async () => JSON.stringify(await (await fetch(`${proxyUrl}/v1/models`)).json()).includes('m-only-b'))).toBe(true);

    beating.delete('ttl-b');
    expect(await waitFor(async () => (await instances()).find((i) => i.instance_id === 'ttl-b')?.alive === false)).toBe(true);
    const hitsB = b.hits;
    for (let i = 0; i < 6; i++) expect((await post('m-ttl')).headers.get('x-switchyard-instance')).toBe('ttl-a');
    expect(b.hits).toBe(hitsB);
    expect(await waitFor(async () => !JSON.stringify(await (await fetch(`${proxyUrl}/v1/models`)).json()).includes('m-only-b'))).toBe(true);
    const models = (await (await fetch(`${proxyUrl}/v1/models`)).json()) as { object: string; data: { id: string }[] };
    expect(models.object).toBe('list');
    expect(models.data.map((m) => m.id)).toContain('m-ttl');
  });

  it('answers 504 when the instance does not answer within UPSTREAM_TIMEOUT_S, and 413 over MAX_BODY_BYTES', async () => {
    const port = await freePort();
    procs.push(await new AppProcess('apps/proxy/src/main.ts', { REDIS_URL: redis.url, PROXY_NAME: 'impatient', UPSTREAM_TIMEOUT_S: '0.3', MAX_BODY_BYTES: '2048' }).start(port));
    const silent = await upstream(() => undefined);
    await register('to-silent', silent.url, ['m-timeout']);
    const url = `http://127.0.0.1:${port}/v1/chat/completions`;
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm-timeout', messages: [] }) });
    expect(res.status).toBe(504);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('upstream_timeout');
    expect(await waitFor(async () => (await inflightOf(['to-silent'])) === 0)).toBe(true);
    const big = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm-timeout', messages: [{ role: 'user', content: 'x'.repeat(4096) }] }) });
    expect(big.status).toBe(413);
    expect(((await big.json()) as { error: { message: string } }).error.message).toMatch(/MAX_BODY_BYTES/);
    expect(silent.hits).toBe(1);
  });

  describe('tokens, time to first token and traces', () => {
    /** What the usage upstream saw of each request: the body's stream_options and the traceparent header. */
    const seen: { includeUsage: unknown; traceparent: string | undefined }[] = [];
    const USAGE = { prompt_tokens: 17, completion_tokens: 4, total_tokens: 21 };
    const chunk = (data: object) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm-usage', ...data })}\n\n`;
    const stream = async (headers: Record<string, string> = {}, askUsage = true) => {
      const s = await client.chat.completions.create({ model: 'm-usage', messages: [], stream: true, ...(askUsage ? { stream_options: { include_usage: true } } : {}) }, { headers });
      const got: { content: string; usage: unknown } = { content: '', usage: null };
      for await (const c of s) {
        got.content += c.choices[0]?.delta?.content ?? '';
        if (c.usage) got.usage = c.usage;
      }
      return got;
    };
    const counters = async () => ({
      prompt: await metric('switchyard_proxy_prompt_tokens_total{model="m-usage",instance_id="usage-a"}'),
      completion: await metric('switchyard_proxy_completion_tokens_total{model="m-usage",instance_id="usage-a"}'),
      ttft: await metric('switchyard_proxy_time_to_first_token_seconds_count{model="m-usage"}'),
      ok: await metric('switchyard_proxy_model_requests_total{model="m-usage",instance_id="usage-a",status_class="2xx"}'),
    });

    beforeAll(async () => {
      const u = await upstream((req, res, body) => {
        const includeUsage = (body.stream_options as { include_usage?: unknown } | undefined)?.include_usage;
        seen.push({ includeUsage, traceparent: req.headers.traceparent as string | undefined });
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        // Tokens in separate writes, the usage chunk (empty choices) only when asked, as OpenAI and vLLM do.
        res.write(chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Hel' }, finish_reason: null }] }));
        setTimeout(() => {
          res.write(chunk({ choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: 'stop' }] }));
          res.end(`${includeUsage === true ? chunk({ choices: [], usage: USAGE }) : ''}data: [DONE]\n\n`);
        }, 20);
      });
      await register('usage-a', u.url, ['m-usage']);
    });

    it('a streamed request with usage moves the token counters by exactly its usage and the TTFT count by one, under its model', async () => {
      const before = await counters();
      const got = await stream();
      expect(got).toEqual({ content: 'Hello', usage: USAGE });
      expect(await counters()).toEqual({ prompt: before.prompt + 17, completion: before.completion + 4, ttft: before.ttft + 1, ok: before.ok + 1 });
    });

    it('USAGE_FROM_STREAMS: a client that did not ask gets no usage chunk, the upstream was asked, and the counters still move', async () => {
      const before = await counters();
      seen.length = 0;
      const got = await stream({}, false);
      expect(got).toEqual({ content: 'Hello', usage: null });
      expect(seen.map((s) => s.includeUsage)).toEqual([true]);
      expect(await counters()).toEqual({ prompt: before.prompt + 17, completion: before.completion + 4, ttft: before.ttft + 1, ok: before.ok + 1 });
    });

    it("a span per request, child of the client's traceparent, naming the instance; the upstream gets a traceparent of the same trace", async () => {
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const clientSpan = '00f067aa0ba902b7';
      seen.length = 0;
      await stream({ traceparent: `00-${traceId}-${clientSpan}-01` });
      expect(await waitFor(async () => spans.some((s) => s.traceId === traceId), 10_000)).toBe(true);
      const mine = spans.filter((s) => s.traceId === traceId);
      expect(mine).toHaveLength(1);
      const [span] = mine;
      expect(span.parentSpanId).toBe(clientSpan);
      expect(span.kind).toBe(2); // SERVER
      expect({ instance: attr(span, 'switchyard.instance_id'), model: attr(span, 'gen_ai.request.model'), status: attr(span, 'http.response.status_code'), attempts: attr(span, 'switchyard.attempts'), input: attr(span, 'gen_ai.usage.input_tokens'), output: attr(span, 'gen_ai.usage.output_tokens') }).toEqual({
        instance: 'usage-a',
        model: 'm-usage',
        status: 200,
        attempts: 1,
        input: 17,
        output: 4,
      });
      // The upstream's parent is the proxy's span, in the client's trace.
      expect(seen.map((s) => s.traceparent)).toEqual([`00-${traceId}-${span.spanId}-01`]);
    });
  });

  it('reports readiness, metrics and OpenAI-shaped 404s from the Nest shell', async () => {
    const ready = await fetch(`${proxyUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', store: 'ok', degraded: false });
    expect((await fetch(`${proxyUrl}/healthz`)).status).toBe(200);
    expect(await metric('switchyard_proxy_selections_total{strategy="least_load",instance_id="fo-ok"}')).toBeGreaterThanOrEqual(9);
    // One JSON log line per forwarded request: id, instance, status, duration; never the body.
    await fetch(`${proxyUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'log-check-1' }, body: JSON.stringify({ model: 'm-failover', messages: [{ role: 'user', content: 'secret-prompt' }] }) }).then((r) => r.text());
    await waitFor(async () => procs[1].output.includes('log-check-1'));
    const line = procs[1].output.split('\n').find((l) => l.includes('log-check-1'))!;
    // Tokens from the body's usage (1 and 1), no queue, the client's address; LOG_TIME=iso. Attempts: 2 when the flaky 503 instance was tried first.
    expect(JSON.parse(line)).toMatchObject({ msg: 'request', request_id: 'log-check-1', model: 'm-failover', instance_id: 'fo-ok', status: 200, route: '/v1/chat/completions', prompt_tokens: 1, completion_tokens: 1, queue_wait_ms: 0, client_address: '127.0.0.1' });
    expect([1, 2]).toContain(JSON.parse(line).attempts);
    expect(JSON.parse(line)).toMatchObject({ duration_ms: expect.any(Number), ttft_ms: expect.any(Number), time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) });
    expect(procs[1].output).not.toContain('secret-prompt');
    const missing = await fetch(`${proxyUrl}/v1/nothing-here`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { type: string } }).error.type).toBe('not_found_error');
    expect(await metric('switchyard_proxy_http_requests_total{route="unmatched",method="GET",status="404"}')).toBe(1);
    expect(await metric('switchyard_proxy_http_requests_total{route="/healthz",method="GET",status="200"}')).toBeGreaterThanOrEqual(1);
    expect(await metric('switchyard_proxy_http_requests_total{route="/v1/chat/completions",method="POST",status="502"}')).toBe(1);
    // The deprecated name, kept one release, counts the same.
    expect(await metric('switchyard_proxy_requests_total{route="unmatched",method="GET",status="404"}')).toBe(1);
  });
});

/** The operator CLI as a user runs it; stdout and stderr together. */
function cli(args: string[]): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.resolve(__dirname, '../../../bin/switchyard.js'), ...args], { env: { ...process.env, CONTROL_PLANE_URL: cpUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.once('close', () => resolve(out));
  });
}

describe('the edge: credentials, loops, endpoints, the OpenAI surface', () => {
  const KEY = 'sk-instance-e2e-0123456789';
  const ORIGIN = 'https://app.example';
  let openProxyUrl = '';

  beforeAll(async () => {
    // A second proxy that forwards client credentials and allows one browser origin.
    const port = await freePort();
    procs.push(await new AppProcess('apps/proxy/src/main.ts', { REDIS_URL: redis.url, PROXY_NAME: 'open', REGISTRY_RESYNC_S: '0.5', FORWARD_CLIENT_AUTH: 'true', CORS_ORIGINS: ORIGIN }).start(port));
    openProxyUrl = `http://127.0.0.1:${port}`;
  });

  it("keeps client credentials from instances unless FORWARD_CLIENT_AUTH=true; an instance's own key arrives as Bearer and is never shown or logged", async () => {
    const keyed = await good('keyed');
    const plain = await good('plain');
    expect(await cli(['register', keyed.url, '-m', 'm-auth', '--id', 'auth-keyed', '--api-key', KEY, '--no-probe'])).toContain('registered auth-keyed');
    await register('auth-plain', plain.url, ['m-auth-plain']);
    beating.add('auth-keyed');
    const headers = { cookie: 'session=client-cookie', 'x-api-key': 'client-x-key' };
    const viaDefault = new OpenAI({ baseURL: `${proxyUrl}/v1`, apiKey: 'client-key', maxRetries: 0, defaultHeaders: headers });
    const viaOpen = new OpenAI({ baseURL: `${openProxyUrl}/v1`, apiKey: 'client-key', maxRetries: 0, defaultHeaders: headers });
    await waitFor(async () => (await fetch(`${openProxyUrl}/v1/models`).then((r) => r.text())).includes('m-auth-plain'));
    for (const [client, model] of [[viaDefault, 'm-auth'], [viaDefault, 'm-auth-plain'], [viaOpen, 'm-auth'], [viaOpen, 'm-auth-plain']] as const) {
      await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    }
    const posts = (u: FakeUpstream) => u.received.filter((r) => r.method === 'POST').map((r) => [r.headers.authorization, r.headers.cookie, r.headers['x-api-key']]);
    // The keyed instance gets its own key from both proxies; the plain one gets the client's only from the proxy that forwards it.
    expect(posts(keyed)).toEqual([[`Bearer ${KEY}`, undefined, undefined], [`Bearer ${KEY}`, 'session=client-cookie', undefined]]);
    expect(posts(plain)).toEqual([[undefined, undefined, undefined], ['Bearer client-key', 'session=client-cookie', undefined]]);
    // The control plane's probes carry the key too (vLLM --api-key protects /v1/*).
    expect(await waitFor(() => keyed.received.some((r) => r.method === 'GET' && r.headers.authorization === `Bearer ${KEY}`), 15_000)).toBe(true);
    // Never readable: admin reads, debug view, dashboard, CLI output, logs of both apps.
    const reads = await Promise.all(['/v1/instances?include_dead=true', '/v1/instances/auth-keyed', '/debug/instance_loads?include_dead=true', '/dashboard', '/v1/instance/list'].map((p) => fetch(cpUrl + p).then((r) => r.text())));
    expect(reads[1]).toContain('auth-keyed');
    expect(reads[2]).toContain('auth-keyed');
    for (const text of reads) expect(text).not.toContain(KEY);
    const cliOut = (await cli(['instances', '--all', '-v'])) + (await cli(['instances', '--all', '--json']));
    expect(cliOut).toContain('auth-keyed');
    expect(cliOut).not.toContain(KEY);
    for (const p of procs) expect(p.output).not.toContain(KEY);
  });

  it('answers 508 when an instance URL points back at a proxy: the request passes the forward path twice, not 64 times', async () => {
    await register('loop-self', proxyUrl, ['m-loop']);
    await waitFor(async () => (await fetch(`${proxyUrl}/v1/models`).then((r) => r.text())).includes('m-loop'));
    const res = await fetch(`${proxyUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'loop-check-1' }, body: JSON.stringify({ model: 'm-loop', messages: [] }) });
    expect(res.status).toBe(508);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('loop_detected');
    // One access log line per pass through the forward path; the request id travels upstream, so both passes carry it.
    const passes = () => procs[1].output.split('\n').filter((l) => l.includes('"msg":"request"') && l.includes('"request_id":"loop-check-1"'));
    await waitFor(() => passes().length >= 2);
    expect(passes().map((l) => (JSON.parse(l) as { status: number }).status)).toEqual([508, 508]);
    beating.delete('loop-self');
    await fetch(`${cpUrl}/v1/instances/loop-self`, { method: 'DELETE' });
  });

  it('sends a rerank only to the instance listing /v1/rerank, and an audio transcription through the official client', async () => {
    const chatOnly = await good('chat-only');
    const reranker = await upstream((req, res) => answerJson(res, 200, req.url === '/v1/audio/transcriptions' ? { text: 'transcribed' } : { results: [{ index: 0, relevance_score: 0.9 }] }));
    await register('ep-chat', chatOnly.url, ['m-ep']);
    const res = await fetch(`${cpUrl}/v1/instances`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ instance_id: 'ep-rerank', url: reranker.url, models: ['m-ep'], endpoints: ['/v1/rerank', '/v1/audio/transcriptions'] }) });
    expect(res.ok).toBe(true);
    beating.add('ep-rerank');
    await waitFor(async () => (await fetch(`${proxyUrl}/v1/models`).then((r) => r.text())).includes('m-ep'));
    await waitFor(async () => (await post('m-ep')).status === 200);
    for (let i = 0; i < 6; i++) {
      const r = await fetch(`${proxyUrl}/v1/rerank`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm-ep', query: 'q', documents: ['a'] }) });
      expect(r.status).toBe(200);
    }
    expect(chatOnly.received.filter((r) => r.path === '/v1/rerank')).toHaveLength(0);
    expect(reranker.received.filter((r) => r.path === '/v1/rerank')).toHaveLength(6);
    const text = await client.audio.transcriptions.create({ model: 'm-ep', file: await toFile(Buffer.from('RIFF0000WAVEfmt '), 'a.wav', { type: 'audio/wav' }) });
    expect(text.text).toBe('transcribed');
    const none = await fetch(`${proxyUrl}/v1/score`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm-ep', text_1: 'a', text_2: 'b' }) });
    expect(none.status).toBe(404);
    expect(((await none.json()) as { error: { message: string } }).error.message).toContain('/v1/score');
  });

  it("retrieves a model with the official client, 404s an unknown one, and lists the vLLM engine's max_model_len", async () => {
    const engine = await startFakeEngine('vllm', { model: 'org/vllm-model' });
    try {
      const res = await fetch(`${cpUrl}/v1/instances`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ instance_id: 'vllm-1', url: engine.url, models: ['org/vllm-model'], probe_now: true }) });
      expect(res.status).toBe(200);
      await waitFor(async () => (await fetch(`${proxyUrl}/v1/models`).then((r) => r.text())).includes('org/vllm-model'));
      expect(await client.models.retrieve('org/vllm-model')).toEqual({ id: 'org/vllm-model', object: 'model', created: 0, owned_by: 'vllm', max_model_len: 8192 });
      const list = await client.models.list();
      expect(list.data.find((m) => m.id === 'org/vllm-model')).toMatchObject({ max_model_len: 8192, owned_by: 'vllm' });
      await expect(client.models.retrieve('no-such-model')).rejects.toBeInstanceOf(NotFoundError);
    } finally {
      await fetch(`${cpUrl}/v1/instances/vllm-1`, { method: 'DELETE' });
      await engine.close();
    }
  });

  it('answers a CORS preflight from an allowed origin with 204 and refuses another, taking no slot', async () => {
    const forwardedBefore = await metricAt(openProxyUrl, 'switchyard_proxy_requests_total{route="/v1/chat/completions",method="POST"');
    const ok = await fetch(`${openProxyUrl}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' } });
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(ok.headers.get('access-control-allow-methods')).toContain('POST');
    const refused = await fetch(`${openProxyUrl}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    expect((await fetch(`${proxyUrl}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: ORIGIN } })).status).toBe(404);
    expect(await metricAt(openProxyUrl, 'switchyard_proxy_requests_total{route="/v1/chat/completions",method="POST"')).toBe(forwardedBefore);
  });
});

async function metricAt(url: string, prefix: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(prefix)) sum += Number(line.split(' ').pop());
  return sum;
}
