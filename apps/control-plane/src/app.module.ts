import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import type { LoadStore } from '@switchyard/load-store';
import { OpenAiErrorFilter } from './common/openai-error.filter';
import { CONTROL_PLANE_CONFIG, LOAD_STORE } from './common/tokens';
import type { ControlPlaneConfig } from './config';
import { HealthController } from './health/health.controller';
import { InstancesController } from './instances/instances.controller';
import { InstancesService } from './instances/instances.service';

@Module({})
export class AppModule {
  static forRoot(config: ControlPlaneConfig, store: LoadStore): DynamicModule {
    return {
      module: AppModule,
      controllers: [InstancesController, HealthController],
      providers: [
        { provide: CONTROL_PLANE_CONFIG, useValue: config },
        { provide: LOAD_STORE, useValue: store },
        { provide: APP_FILTER, useClass: OpenAiErrorFilter },
        InstancesService,
      ],
    };
  }
}
