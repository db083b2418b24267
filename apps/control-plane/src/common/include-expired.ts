import { createParamDecorator, ExecutionContext } from '@nestjs/common';

const yes = (v: unknown) => v === 'true' || v === '1';

/**
 * `?include_expired=true` (or `1`): list expired instances and proxies too. `include_dead`, its
 * old name, is accepted for one release (deprecated in the README).
 */
export const IncludeExpired = createParamDecorator((_data: unknown, ctx: ExecutionContext): boolean => {
  const query = (ctx.switchToHttp().getRequest<{ query?: Record<string, unknown> }>().query ?? {}) as Record<string, unknown>;
  return yes(query.include_expired ?? query.include_dead);
});
