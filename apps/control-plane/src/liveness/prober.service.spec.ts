import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Logger } from '@nestjs/common';
import { MemoryLoadStore } from '@switchyard/load-store';
import { renderEngineMetrics } from '@switchyard/engines';
import { loadControlPlaneConfig } from '../config';
import { ProberService } from './prober.service';

/** An engine whose answers each test sets: status and body per path, or a hang. */
class Upstream {
  routes: Record<string, { status: number; body: string } | 'hang'> = {};
  hits: string[] = [];
  auth: (string | undefined)[] = [];
  readonly server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    this.hits.push(path);
    this.auth.push(req.headers.authorization);
    const r = this.routes[path] ?? { status: 404, body: 'not found' };
    if (r === 'hang') return;
    res.writeHead(r.status, { 'content-type': 'text/plain' });
    res.end(r.body);
  });
  get url() {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
}

const up = new Upstream();
let now = 1_000_000;
let store: MemoryLoadStore;
let prober: ProberService;
const logged: string[] = [];

const record = (id: string) => ({ instance_id: id, url: up.url, models: ['m'], endpoints: [], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 30 });
const state = async (id: string) => (await store.getInstance(id))!;
const vllmPage = (waiting: number, kv: number) => renderEngineMetrics('vllm', { model: 'm', running: 1, waiting, kv_cache_usage: kv });

beforeAll(async () => {
  await new Promise<void>((r) => up.server.listen(0, '127.0.0.1', r));
  jest.spyOn(Logger.prototype, 'warn').mockImplementation((m: unknown) => void logged.push(String(m)));
  jest.spyOn(Logger.prototype, 'log').mockImplementation((m: unknown) => void logged.push(String(m)));
});
afterAll(async () => {
  up.server.closeAllConnections();
  await new Promise((r) => up.server.close(r));
  jest.restoreAllMocks();
});
beforeEach(async () => {
  up.routes = { '/health': { status: 200, body: '' }, '/metrics': { status: 200, body: vllmPage(2, 0.5) } };
  up.hits = [];
  up.auth = [];
  logged.length = 0;
  store = new MemoryLoadStore({ now: () => now });
  prober = new ProberService(store, loadControlPlaneConfig({ PROBE_TIMEOUT_S: '5', KV_CACHE_GUARD: '0.9' }));
  await store.register(record('e'));
});

describe('ProberService', () => {
  it('keeps a healthy engine alive like a heartbeat and reads its signals', async () => {
    up.routes['/v1/models'] = { status: 200, body: '{"data":[{"id":"m"}]}' };
    now += 20_000;
    await prober.probe(await state('e'));
    const s = await state('e');
    expect(s.last_seen_at).toBe(now);
    expect(s.engine).toMatchObject({ engine: 'vllm', running: 1, waiting: 2, kv_cache_usage: 0.5, scrape_error: null });
    // What /v1/models says is read after the first success, then not again while it is fresh.
    expect(up.hits).toEqual(['/health', '/metrics', '/v1/models']);
    up.hits = [];
    await prober.probe(await state('e'));
    expect(up.hits).toEqual(['/health', '/metrics']);
  });

  it("probes an instance that has its own api_key with it, and stores what its /v1/models says of the instance's models", async () => {
    await store.register({ ...record('k'), models: ['m', 'n'], api_key: 'sk-engine' });
    up.routes['/v1/models'] = { status: 200, body: JSON.stringify({ data: [{ id: 'm', owned_by: 'vllm', max_model_len: 4096 }, { id: 'n' }, { id: 'other', max_model_len: 1 }] }) };
    await prober.probe(await state('k'));
    expect(up.auth).toEqual(['Bearer sk-engine', 'Bearer sk-engine', 'Bearer sk-engine']);
    const s = await state('k');
    expect(s.model_info).toEqual({ m: { max_model_len: 4096, owned_by: 'vllm' }, n: { max_model_len: null, owned_by: null } });
    expect(s.api_key).toBe('sk-engine');
    expect(logged.join('\n')).not.toContain('sk-engine');
  });

  it('takes an engine out after two failed probes in a row, not one, and logs it once with the reason; a success brings it back', async () => {
    up.routes['/health'] = { status: 503, body: '' };
    await prober.probe(await state('e'));
    expect((await state('e')).is_alive).toBe(true);
    await prober.probe(await state('e'));
    expect((await state('e')).is_alive).toBe(false);
    await prober.probe(await state('e'));
    expect(logged.filter((l) => l.includes('not alive'))).toEqual(['instance e not alive (probes failed: GET /health: status 503)']);
    up.routes['/health'] = { status: 200, body: '' };
    await prober.probe(await state('e'));
    expect((await state('e')).is_alive).toBe(true);
    expect(logged.filter((l) => l.includes(' alive (probe recovered'))).toHaveLength(1);
  });

  it('counts a probe that does not answer within PROBE_TIMEOUT_S as failed', async () => {
    up.routes['/health'] = 'hang';
    const impatient = new ProberService(store, loadControlPlaneConfig({ PROBE_TIMEOUT_S: '0.3' }));
    await impatient.probe(await state('e'));
    await impatient.probe(await state('e'));
    expect((await state('e')).is_alive).toBe(false);
    expect(logged.join('\n')).toMatch(/GET \/health: no answer within 0\.3 s/);
  });

  it('falls back to /v1/models where /health is absent', async () => {
    up.routes = { '/v1/models': { status: 200, body: '{"data":[{"id":"m"}]}' } };
    now += 20_000;
    await prober.probe(await state('e'));
    expect((await state('e')).last_seen_at).toBe(now);
    expect(up.hits).toEqual(['/health', '/v1/models', '/metrics', '/v1/models']);
    // Remembered: the next probe goes straight to /v1/models.
    up.hits = [];
    await prober.probe(await state('e'));
    expect(up.hits[0]).toBe('/v1/models');
  });

  it('leaves an instance that keeps heartbeating alive while its probes fail', async () => {
    up.routes['/health'] = { status: 500, body: '' };
    await prober.probe(await state('e'));
    now += 1000;
    await store.heartbeat('e', { qps_1m: 1 });
    await prober.probe(await state('e'));
    expect((await state('e')).is_alive).toBe(true);
  });

  it('keeps the last signals and says why when /metrics is garbage, too large or failing; a 404 is no error', async () => {
    await prober.probe(await state('e'));
    for (const [route, error] of [
      [{ status: 200, body: '<html>oops</html>' }, /GET \/metrics: /],
      [{ status: 500, body: '' }, /GET \/metrics: status 500/],
      [{ status: 200, body: 'x'.repeat(5 * 1024 * 1024) }, /GET \/metrics: answer larger than 2097152 bytes/],
      [{ status: 200, body: 'vllm:num_requests_waiting{model_name="m"} NaN\n' }, null],
    ] as const) {
      up.routes['/metrics'] = route;
      await prober.probe(await state('e'));
      const e = (await state('e')).engine;
      if (error) expect(e).toMatchObject({ engine: 'vllm', waiting: 2, kv_cache_usage: 0.5, scrape_error: expect.stringMatching(error) });
      else expect(e).toMatchObject({ engine: 'vllm', waiting: null, scrape_error: null });
    }
    up.routes['/metrics'] = { status: 404, body: '' };
    const before = (await state('e')).engine;
    await prober.probe(await state('e'));
    expect((await state('e')).engine).toEqual(before);
  });

  it('marks an engine over KV_CACHE_GUARD saturated, and 1 turns the guard off', async () => {
    expect(prober.saturated({ engine: 'vllm', running: 0, waiting: 0, kv_cache_usage: 0.9, scraped_at: 1, scrape_error: null })).toBe(true);
    expect(prober.saturated({ engine: 'vllm', running: 0, waiting: 0, kv_cache_usage: 0.89, scraped_at: 1, scrape_error: null })).toBe(false);
    expect(prober.saturated({ engine: 'tgi', running: 0, waiting: 0, kv_cache_usage: null, scraped_at: 1, scrape_error: null })).toBe(false);
    const off = new ProberService(store, loadControlPlaneConfig({ KV_CACHE_GUARD: '1' }));
    expect(off.saturated({ engine: 'vllm', running: 0, waiting: 0, kv_cache_usage: 1, scraped_at: 1, scrape_error: null })).toBe(false);
  });
});
