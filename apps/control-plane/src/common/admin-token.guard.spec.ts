import { ExecutionContext, HttpException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { loadControlPlaneConfig } from '../config';
import { AdminTokenGuard, NeedsRole } from './admin-token.guard';

class Routes {
  change(): void {}
  @NeedsRole('read')
  read(): void {}
}

const ctx = (authorization: string | undefined, handler: 'change' | 'read' = 'change') =>
  ({
    getHandler: () => Routes.prototype[handler],
    getClass: () => Routes,
    switchToHttp: () => ({ getRequest: () => ({ headers: authorization === undefined ? {} : { authorization } }) }),
  }) as unknown as ExecutionContext;

const statusOf = (guard: AdminTokenGuard, c: ExecutionContext): number => {
  try {
    return guard.canActivate(c) ? 200 : 0;
  } catch (e) {
    return (e as HttpException).getStatus();
  }
};

const READ = 'grafana-read-token-0123456789';
const OPS = 'ops-admin-token-0123456789abcdef';

describe('AdminTokenGuard', () => {
  const guarded = new AdminTokenGuard(loadControlPlaneConfig({ ADMIN_TOKEN: 's3cret' }), new Reflector());
  it('lets the right bearer token through, the scheme in any case', () => {
    for (const h of ['Bearer s3cret', 'bearer s3cret', 'BEARER s3cret', 'Bearer  s3cret']) expect([h, statusOf(guarded, ctx(h))]).toEqual([h, 200]);
  });
  it('answers 401 to a missing or wrong token', () => {
    for (const h of [undefined, '', 'Bearer nope', 's3cret', 'Bearer s3cret2', 'Bearer s3cre', 'Basic s3cret', 'Bearer', 'Bearers3cret']) {
      expect([h, statusOf(guarded, ctx(h))]).toEqual([h, 401]);
    }
  });
  it('is open when no token is configured (loopback only; the config refuses otherwise)', () => {
    expect(statusOf(new AdminTokenGuard(loadControlPlaneConfig({}), new Reflector()), ctx(undefined))).toBe(200);
  });

  describe('with ADMIN_TOKENS roles', () => {
    const roles = new AdminTokenGuard(loadControlPlaneConfig({ ADMIN_TOKEN: 's3cret', ADMIN_TOKENS: `grafana:read:${READ},ops:admin:${OPS}` }), new Reflector());
    it('a read token reads and is refused changes with 403', () => {
      expect(statusOf(roles, ctx(`Bearer ${READ}`, 'read'))).toBe(200);
      expect(statusOf(roles, ctx(`Bearer ${READ}`, 'change'))).toBe(403);
    });
    it('an admin token (from the list or ADMIN_TOKEN) does both', () => {
      for (const t of [OPS, 's3cret']) {
        expect(statusOf(roles, ctx(`Bearer ${t}`, 'read'))).toBe(200);
        expect(statusOf(roles, ctx(`bearer ${t}`, 'change'))).toBe(200);
      }
    });
    it('an unknown token is 401 on either kind of route', () => {
      expect(statusOf(roles, ctx('Bearer grafana-read-token-012345678', 'read'))).toBe(401);
      expect(statusOf(roles, ctx(`Bearer ${READ}x`, 'change'))).toBe(401);
    });
  });
});
