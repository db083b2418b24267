import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { OpenAiErrorFilter } from '@switchyard/nest-common';
import type { ProxyRuntime } from '../proxy-runtime';
import { HealthController } from './health.controller';
import { MetricsController } from './metrics.controller';
import { ModelsController } from './models.controller';
import { PROXY_RUNTIME } from './tokens';

/** The Nest shell around the hot path: health, readiness, models and metrics. */
@Module({})
export class ProxyModule {
  static forRoot(runtime: ProxyRuntime): DynamicModule {
    return {
      module: ProxyModule,
      controllers: [HealthController, ModelsController, MetricsController],
      providers: [
        { provide: PROXY_RUNTIME, useValue: runtime },
        { provide: APP_FILTER, useClass: OpenAiErrorFilter },
      ],
    };
  }
}
