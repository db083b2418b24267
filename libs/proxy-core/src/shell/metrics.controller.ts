import { Controller, Get, Header, Inject } from '@nestjs/common';
import type { ProxyRuntime } from '../proxy-runtime';
import { PROXY_RUNTIME } from './tokens';

@Controller()
export class MetricsController {
  constructor(@Inject(PROXY_RUNTIME) private readonly rt: ProxyRuntime) {}

  @Get('metrics')
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  metrics(): Promise<string> {
    return this.rt.metrics.registry.metrics();
  }
}
