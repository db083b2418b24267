import { CanActivate, ExecutionContext, HttpException, Inject, Injectable } from '@nestjs/common';
import { errorBody } from '@switchyard/contracts';
import type { FastifyRequest } from 'fastify';
import { timingSafeEqual } from 'node:crypto';
import type { ControlPlaneConfig } from '../config';
import { CONTROL_PLANE_CONFIG } from './tokens';

/** Admin and debug routes need `Authorization: Bearer $ADMIN_TOKEN` when ADMIN_TOKEN is set. */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  private readonly expected?: Buffer;

  constructor(@Inject(CONTROL_PLANE_CONFIG) config: ControlPlaneConfig) {
    this.expected = config.ADMIN_TOKEN ? Buffer.from(`Bearer ${config.ADMIN_TOKEN}`) : undefined;
  }

  canActivate(context: ExecutionContext): boolean {
    if (!this.expected) return true;
    const got = Buffer.from(context.switchToHttp().getRequest<FastifyRequest>().headers.authorization ?? '');
    if (got.length === this.expected.length && timingSafeEqual(got, this.expected)) return true;
    throw new HttpException(errorBody('missing or wrong admin token (Authorization: Bearer …)', 'authentication_error', 'invalid_admin_token'), 401);
  }
}
