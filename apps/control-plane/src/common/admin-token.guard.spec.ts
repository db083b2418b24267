import { ExecutionContext, HttpException } from '@nestjs/common';
import { loadControlPlaneConfig } from '../config';
import { AdminTokenGuard } from './admin-token.guard';

const ctx = (authorization?: string) =>
  ({ switchToHttp: () => ({ getRequest: () => ({ headers: authorization ? { authorization } : {} }) }) }) as unknown as ExecutionContext;

describe('AdminTokenGuard', () => {
  const guarded = new AdminTokenGuard(loadControlPlaneConfig({ ADMIN_TOKEN: 's3cret' }));
  it('lets the right bearer token through', () => {
    expect(guarded.canActivate(ctx('Bearer s3cret'))).toBe(true);
  });
  it('answers 401 to a missing or wrong token', () => {
    for (const h of [undefined, 'Bearer nope', 's3cret', 'Bearer s3cret2']) {
      let status = 0;
      try {
        guarded.canActivate(ctx(h));
      } catch (e) {
        status = (e as HttpException).getStatus();
      }
      expect(status).toBe(401);
    }
  });
  it('is open when ADMIN_TOKEN is unset', () => {
    expect(new AdminTokenGuard(loadControlPlaneConfig({})).canActivate(ctx())).toBe(true);
  });
});

describe('loadControlPlaneConfig', () => {
  it('applies the documented defaults', () => {
    expect(loadControlPlaneConfig({})).toMatchObject({ PORT: 8081, REDIS_URL: 'redis://127.0.0.1:6379', INSTANCE_TTL_S: 30 });
  });
  it('names the variable that is wrong', () => {
    expect(() => loadControlPlaneConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadControlPlaneConfig({ REDIS_URL: 'http://x' })).toThrow(/REDIS_URL/);
    expect(() => loadControlPlaneConfig({ INSTANCE_TTL_S: '0' })).toThrow(/INSTANCE_TTL_S/);
  });
});
