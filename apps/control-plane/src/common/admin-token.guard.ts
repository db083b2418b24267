import { CanActivate, ExecutionContext, HttpException, Inject, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { errorBody } from '@switchyard/contracts';
import type { FastifyRequest } from 'fastify';
import { createHash, timingSafeEqual } from 'node:crypto';
import { AdminRole, adminTokens, ControlPlaneConfig, isLoopbackHost } from '../config';
import { CONTROL_PLANE_CONFIG } from './tokens';

const ROLE_KEY = 'switchyard:admin-role';

/** The role a guarded route needs; `admin` when a route does not say. */
export const NeedsRole = (role: AdminRole) => SetMetadata(ROLE_KEY, role);

const digest = (s: string) => createHash('sha256').update(s).digest();

/** `localhost:8081` → `localhost`, `[::1]:8081` → `[::1]`. */
function hostName(host: string): string {
  return host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0];
}

/** `Authorization: Bearer <token>`, the scheme in any case (RFC 9110 §11.1). */
const BEARER = /^bearer +(\S+) *$/i;

/**
 * Admin and debug routes need a bearer token once any is configured (ADMIN_TOKEN,
 * ADMIN_TOKENS); read-only routes accept a `read` or an `admin` token, changes only `admin`.
 */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  /** Digests, so every comparison is between equal lengths and takes the same time whatever the token sent. */
  private readonly tokens: { role: AdminRole; digest: Buffer }[];
  /** Open on loopback (npm start): only requests addressed to a loopback name, so a web page cannot reach it by DNS rebinding. */
  private readonly loopbackOnly: boolean;

  constructor(
    @Inject(CONTROL_PLANE_CONFIG) config: ControlPlaneConfig,
    private readonly reflector: Reflector,
  ) {
    this.tokens = adminTokens(config).map((t) => ({ role: t.role, digest: digest(t.token) }));
    this.loopbackOnly = this.tokens.length === 0 && isLoopbackHost(config.HOST);
  }

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    if (this.tokens.length === 0) {
      if (this.loopbackOnly && !isLoopbackHost(hostName(request.headers.host ?? ''))) {
        throw new HttpException(errorBody('host: without an admin token the admin API answers only requests addressed to localhost', 'permission_error', 'host_not_allowed'), 403);
      }
      return true;
    }
    const needs = this.reflector.getAllAndOverride<AdminRole | undefined>(ROLE_KEY, [context.getHandler(), context.getClass()]) ?? 'admin';
    const header = request.headers.authorization ?? '';
    const presented = digest(BEARER.exec(header)?.[1] ?? '');
    let role: AdminRole | undefined;
    // Every token is compared, so the time taken does not tell which one (or whether any) matched.
    for (const t of this.tokens) {
      if (timingSafeEqual(presented, t.digest)) role = t.role;
    }
    if (!role) throw new HttpException(errorBody('missing or wrong admin token (Authorization: Bearer …)', 'authentication_error', 'invalid_admin_token'), 401);
    if (needs === 'admin' && role !== 'admin') {
      throw new HttpException(errorBody('this token has the read role; changes need a token with the admin role', 'permission_error', 'insufficient_role'), 403);
    }
    return true;
  }
}
