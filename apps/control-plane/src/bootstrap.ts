import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { Logger as PinoLogger } from 'nestjs-pino';
import type { DeclaredInstance, DeclaredKey } from '@switchyard/config';
import type { LoadStore } from '@switchyard/load-store';
import { AppModule } from './app.module';
import { adminTokens, ControlPlaneConfig, isLoopbackHost } from './config';
import { acceptJsonBodiesOnly, frameworkErrors } from './common/json-bodies';

/** Admin bodies are small; anything larger is refused with 413. */
const BODY_LIMIT_BYTES = 256 * 1024;
/** An instance id (at most 200 characters) fits a path segment even percent-encoded throughout. */
const MAX_PARAM_LENGTH = 3 * 200;

export async function createControlPlane(config: ControlPlaneConfig, store: LoadStore, events = true, declared: DeclaredInstance[] = [], keys: DeclaredKey[] = []): Promise<NestFastifyApplication> {
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config, store, events, declared, keys), new FastifyAdapter({ bodyLimit: BODY_LIMIT_BYTES, routerOptions: { maxParamLength: MAX_PARAM_LENGTH }, requestIdHeader: 'x-request-id', frameworkErrors: frameworkErrors as never }),
    // Nest's own parsers would accept form bodies; acceptJsonBodiesOnly installs the only ones.
    { bufferLogs: true, bodyParser: false },
  );
  // Nest's adapter is typed against its own copy of fastify's types.
  acceptJsonBodiesOnly(app.getHttpAdapter().getInstance() as unknown as FastifyInstance);
  app.useLogger(app.get(PinoLogger));
  if (adminTokens(config).length === 0) {
    const where = isLoopbackHost(config.HOST) ? 'anyone on this machine' : `anyone who can reach ${config.HOST}:${config.PORT} (ALLOW_OPEN_ADMIN=true)`;
    new Logger('security').warn(`ADMIN_TOKEN is not set: the admin API is open to ${where}`);
  }
  return app;
}
