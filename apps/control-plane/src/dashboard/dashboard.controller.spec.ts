import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { MemoryLoadStore } from '@switchyard/load-store';
import { createControlPlane } from '../bootstrap';
import { loadControlPlaneConfig } from '../config';

/** The wired app over Fastify's inject: the page needs no token (it holds no data), the data still does. */
describe('GET /dashboard', () => {
  let app: NestFastifyApplication;

  beforeAll(async () => {
    app = await createControlPlane(loadControlPlaneConfig({ ADMIN_TOKEN: 't0ken' }), new MemoryLoadStore(), false);
    await app.init();
    await app.getHttpAdapter().getInstance().ready();
  });

  afterAll(() => app.close());

  it('serves the page as HTML without the admin token, locked to its own origin', async () => {
    const r = await app.inject({ method: 'GET', url: '/dashboard' });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(r.headers['content-security-policy']).toContain("connect-src 'self'");
    expect(r.body).toContain('<title>Switchyard</title>');
    expect(r.body).toContain('/debug/instance_loads');
    expect(r.body).toContain('sessionStorage');
  });

  it('leaves the data it reads behind the token', async () => {
    expect((await app.inject({ method: 'GET', url: '/debug/instance_loads' })).statusCode).toBe(401);
  });
});
