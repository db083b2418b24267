import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { ProxyRuntime } from '../proxy-runtime';
import { PROXY_RUNTIME } from './tokens';

@Controller()
export class HealthController {
  constructor(@Inject(PROXY_RUNTIME) private readonly rt: ProxyRuntime) {}

  /** Liveness: the process answers; stays 200 while draining. */
  @Get('healthz')
  healthz() {
    return { status: 'ok' };
  }

  /** Readiness: 503 while draining or before any registry is known; a store outage is reported, not fatal. */
  @Get('readyz')
  readyz(@Res({ passthrough: true }) reply: FastifyReply) {
    const rt = this.rt;
    const detail = {
      proxy_id: rt.proxyId,
      store: rt.degraded ? 'unreachable' : 'ok',
      degraded: rt.degraded,
      ...(rt.degraded ? { store_error: rt.slots.lastStoreError } : {}),
      // Not a reason to stop taking traffic: the control plane is not in the request path.
      control_plane: rt.controlPlaneReachable ? 'ok' : 'unreachable',
      registry: { instances: rt.registry.size, models: rt.registry.models() },
      inflight_http: rt.exchanges.open,
    };
    // A readiness body, not an error: probes and people read its detail.
    if (rt.draining || !rt.registry.loaded) void reply.status(503);
    if (rt.draining) return { status: 'draining', ...detail };
    if (!rt.registry.loaded) return { status: 'not_ready', ...detail };
    return { status: rt.degraded ? 'degraded' : 'ready', ...detail };
  }
}
