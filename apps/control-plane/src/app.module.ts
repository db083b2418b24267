import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { LoggerModule } from 'nestjs-pino';
import type { LoadStore } from '@switchyard/load-store';
import { OpenAiErrorFilter } from '@switchyard/nest-common';
import type { DeclaredInstance, DeclaredKey } from '@switchyard/config';
import { StoreOutage } from './common/store-outage';
import { CONTROL_PLANE_CONFIG, DECLARED_INSTANCES, LOAD_STORE } from './common/tokens';
import type { ControlPlaneConfig } from './config';
import { HealthController } from './health/health.controller';
import { InstancesController } from './instances/instances.controller';
import { InstancesService } from './instances/instances.service';
import { REGISTRY_EVENTS_CLIENT, RegistryEventsService } from './events/registry-events.service';
import { RegistryEventsClient } from './events/registry-events.client';
import { DebugModule } from './debug/debug.module';
import { LeasesModule } from './leases/leases.module';
import { MetricsModule } from './metrics/metrics.module';
import { DashboardModule } from './dashboard/dashboard.module';
import { KeysModule } from './keys/keys.module';
import { RegistryKeeperService } from './instances/registry-keeper.service';
import { LeadershipService } from './liveness/leadership.service';
import { LivenessService } from './liveness/liveness.service';
import { ProberService } from './liveness/prober.service';

@Module({})
export class AppModule {
  /** With events off (the memory store of single-process mode) nothing is published: there is no one to hear it. */
  static forRoot(config: ControlPlaneConfig, store: LoadStore, events = true, declared: DeclaredInstance[] = [], keys: DeclaredKey[] = []): DynamicModule {
    return {
      module: AppModule,
      // Global so feature modules (debug, metrics, leases) get the config and the store.
      global: true,
      imports: [
        LoggerModule.forRoot({ pinoHttp: pinoHttpOptions(config) }),
        MetricsModule,
        DebugModule,
        LeasesModule,
        DashboardModule,
        KeysModule.forRoot(keys),
      ],
      exports: [CONTROL_PLANE_CONFIG, LOAD_STORE, LeadershipService, StoreOutage],
      controllers: [InstancesController, HealthController],
      providers: [
        { provide: CONTROL_PLANE_CONFIG, useValue: config },
        { provide: LOAD_STORE, useValue: store },
        { provide: DECLARED_INSTANCES, useValue: declared },
        { provide: APP_FILTER, useClass: OpenAiErrorFilter },
        // RegistryEventsService closes it on shutdown.
        ...(events ? [{ provide: REGISTRY_EVENTS_CLIENT, useFactory: () => new RegistryEventsClient(redisTransportOptions(config.REDIS_URL)) }] : []),
        StoreOutage,
        InstancesService,
        RegistryEventsService,
        RegistryKeeperService,
        LeadershipService,
        ProberService,
        LivenessService,
      ],
    };
  }
}

/** JSON logs: one line per request (method, url, status, duration, request id), never a body or a token; routine probes and heartbeats only at debug. */
function pinoHttpOptions(config: ControlPlaneConfig) {
  const routine = /\/heartbeat$|^\/(healthz|readyz|metrics)$|^\/v1\/instance\/heartbeat$/;
  return {
    level: config.LOG_LEVEL,
    base: { app: 'control-plane' },
    redact: ['req.headers.authorization'],
    // Probes stay at debug whatever they answer: a failing readiness probe every few seconds is not an
    // error line each time (the health controller logs the change of state once).
    customLogLevel: (req: { url?: string }, res: { statusCode: number }, err?: Error) => {
      if (routine.test((req.url ?? '').split('?')[0])) return 'debug' as const;
      // A store outage is logged once by StoreOutage; each 503 it causes is a warning, not an error line per request.
      if (res.statusCode === 503 && !err) return 'warn' as const;
      if (err || res.statusCode >= 500) return 'error' as const;
      if (res.statusCode >= 400) return 'warn' as const;
      return 'info' as const;
    },
    serializers: {
      req: (req: { id: unknown; method: string; url: string }) => ({ id: req.id, method: req.method, url: req.url }),
      res: (res: { statusCode: number }) => ({ status: res.statusCode }),
      // pino-http makes an Error for every 5xx; its stack says nothing (the filter logs real failures with theirs).
      err: (err: Error) => ({ type: err.name, message: err.message }),
    },
  };
}

function redisTransportOptions(url: string) {
  const u = new URL(url);
  return {
    host: u.hostname,
    port: Number(u.port || 6379),
    password: u.password ? decodeURIComponent(u.password) : undefined,
    db: u.pathname.length > 1 ? Number(u.pathname.slice(1)) : undefined,
    tls: u.protocol === 'rediss:' ? {} : undefined,
    retryAttempts: 1_000_000,
    retryDelay: 1000,
  };
}
