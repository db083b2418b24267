import { CanActivate, ExecutionContext, HttpException, Inject, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { errorBody } from '@switchyard/contracts';
import type { FastifyRequest } from 'fastify';
import { createHash, timingSafeEqual } from 'node:crypto';
import { AdminRole, adminTokens, ControlPlaneConfig } from '../config';
import { CONTROL_PLANE_CONFIG } from './tokens';

const ROLE_KEY = 'switchyard:admin-role';

/** The role a guarded route needs; `admin` when a route does not say. */
export const NeedsRole = (role: AdminRole) => SetMetadata(ROLE_KEY, role);

const digest = (s: string) => createHash('sha256').update(s).digest();

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

  constructor(
    @Inject(CONTROL_PLANE_CONFIG) config: ControlPlaneConfig,
    private readonly reflector: Reflector,
  ) {
    this.tokens = adminTokens(config).map((t) => ({ role: t.role, digest: digest(t.token) }));
  }

  canActivate(context: ExecutionContext): boolean {
    if (this.tokens.length === 0) return true;
    const needs = this.reflector.getAllAndOverride<AdminRole | undefined>(ROLE_KEY, [context.getHandler(), context.getClass()]) ?? 'admin';
    const header = context.switchToHttp().getRequest<FastifyRequest>().headers.authorization ?? '';
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
