import { Controller, Get, HttpException, Inject } from '@nestjs/common';
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
  readyz() {
    const rt = this.rt;
    const detail = {
      proxy_id: rt.proxyId,
      store: rt.degraded ? 'unreachable' : 'ok',
      degraded: rt.degraded,
      ...(rt.degraded ? { store_error: rt.lastStoreError } : {}),
      registry: { instances: rt.registry.size, models: rt.registry.models() },
      inflight_http: rt.exchanges.open,
    };
    if (rt.draining) throw new HttpException({ status: 'draining', ...detail }, 503);
    if (!rt.registry.loaded) throw new HttpException({ status: 'not_ready', ...detail }, 503);
    return { status: rt.degraded ? 'degraded' : 'ready', ...detail };
  }
}
