import { Module, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { ControlPlaneMetrics } from './control-plane-metrics';
import { MetricsController } from './metrics.controller';

@Module({
  controllers: [MetricsController],
  providers: [ControlPlaneMetrics],
  exports: [ControlPlaneMetrics],
})
export class MetricsModule implements OnModuleInit {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly metrics: ControlPlaneMetrics,
  ) {}

  /**
   * Counted in Fastify's onResponse hook: it sees the final status of every reply, including
   * guard rejections and errors. The route is the pattern, so ids never become label values.
   */
  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    fastify.addHook('onResponse', (request, reply, done) => {
      this.metrics.httpRequests.inc({ route: request.routeOptions.url ?? 'unmatched', method: request.method, status: String(reply.statusCode) });
      done();
    });
  }
}
