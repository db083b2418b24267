import { Controller, Get, Header } from '@nestjs/common';
import { ControlPlaneMetrics } from './control-plane-metrics';

/** Not behind the admin token: Prometheus scrapes without credentials, and nothing here is secret. */
@Controller()
export class MetricsController {
  constructor(private readonly metrics: ControlPlaneMetrics) {}

  @Get('metrics')
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
