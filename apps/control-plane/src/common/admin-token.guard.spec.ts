import { ExecutionContext, HttpException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { loadControlPlaneConfig } from '../config';
import { AdminTokenGuard, NeedsRole } from './admin-token.guard';

class Routes {
  change(): void {}
  @NeedsRole('read')
  read(): void {}
}

const ctx = (authorization: string | undefined, handler: 'change' | 'read' = 'change', host = '127.0.0.1:8081') =>
  ({
    getHandler: () => Routes.prototype[handler],
    getClass: () => Routes,
    switchToHttp: () => ({ getRequest: () => ({ headers: authorization === undefined ? { host } : { authorization, host } }) }),
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
  it('open on loopback, answers only requests addressed to a loopback name (no DNS rebinding)', () => {
    const open = new AdminTokenGuard(loadControlPlaneConfig({}), new Reflector());
    for (const host of ['127.0.0.1:8081', 'localhost:8081', 'LOCALHOST', '[::1]:8081', '127.0.0.2']) expect([host, statusOf(open, ctx(undefined, 'change', host))]).toEqual([host, 200]);
    for (const host of ['evil.example:8081', 'evil.example', '', '10.0.0.1:8081', 'localhost.evil.example']) expect([host, statusOf(open, ctx(undefined, 'change', host))]).toEqual([host, 403]);
    // ALLOW_OPEN_ADMIN on the network is open to any Host, as asked.
    expect(statusOf(new AdminTokenGuard(loadControlPlaneConfig({ HOST: '0.0.0.0', ALLOW_OPEN_ADMIN: 'true' }), new Reflector()), ctx(undefined, 'change', 'evil.example'))).toBe(200);
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
