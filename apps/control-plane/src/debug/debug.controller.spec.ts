import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { InstanceLoadsResponse } from '@switchyard/contracts';
import { MemoryLoadStore } from '@switchyard/load-store';
import { createControlPlane } from '../bootstrap';
import { loadControlPlaneConfig } from '../config';

/** The wired app on the memory store, over Fastify's inject: guard, routes, error shape and the request counter. */
describe('debug and metrics routes', () => {
  let app: NestFastifyApplication;
  const store = new MemoryLoadStore();
  const auth = { authorization: 'Bearer t0ken' };
  const get = (url: string, headers: Record<string, string> = auth) => app.inject({ method: 'GET', url, headers });

  beforeAll(async () => {
    app = await createControlPlane(loadControlPlaneConfig({ ADMIN_TOKEN: 't0ken' }), store, false);
    await app.init();
    await app.getHttpAdapter().getInstance().ready();
    await store.register({ instance_id: 'a', url: 'http://127.0.0.1:1', models: ['m'], endpoints: [], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 30 });
    await store.renewLease({ proxy_id: 'p', inflight_http: 1, queued: { m: 2 }, draining: false, degraded: false }, 10_000);
    await store.acquire({ proxyId: 'p', model: 'm', strategy: 'least_load' });
  });

  afterAll(() => app.close());

  it('guards /debug with the admin token, in the OpenAI error shape', async () => {
    for (const url of ['/debug/instance_loads', '/debug/status']) {
      const r = await get(url, {});
      expect(r.statusCode).toBe(401);
      expect(r.json().error.code).toBe('invalid_admin_token');
    }
  });

  it('serves the instance loads and the status', async () => {
    const loads = (await get('/debug/instance_loads')).json() as InstanceLoadsResponse;
    expect(loads.instances).toMatchObject([{ instance_id: 'a', inflight: 1, inflight_by_proxy: { p: 1 }, queued_by_proxy: { p: 2 }, qps_1m: null, gpu_util: null }]);
    expect(loads.proxies.map((p) => p.proxy_id)).toEqual(['p']);
    expect((await get('/debug/status')).json()).toMatchObject({ instances: { alive: 1, expired: 0 }, proxies: { alive: 1, expired: 0, draining: 0 }, inflight_total: 1, queued_total: 2 });
  });

  it('serves /metrics without a token and counts requests by route pattern and status', async () => {
    await get('/debug/status', {});
    await get('/no/such/route/42');
    const r = await get('/metrics', {});
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/plain/);
    expect(r.body).toContain('switchyard_instance_inflight{instance_id="a"} 1');
    expect(r.body).toMatch(/switchyard_control_plane_http_requests_total\{route="\/debug\/status",method="GET",status="401"\} [1-9]/);
    expect(r.body).toMatch(/switchyard_control_plane_http_requests_total\{route="\/debug\/instance_loads",method="GET",status="200"\} 1/);
    expect(r.body).toMatch(/switchyard_http_requests_total\{route="unmatched",method="GET",status="404"\} 1/);
  });
});
