import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { Logger as PinoLogger } from 'nestjs-pino';
import type { DeclaredInstance } from '@switchyard/config';
import type { LoadStore } from '@switchyard/load-store';
import { AppModule } from './app.module';
import type { ControlPlaneConfig } from './config';

/** Admin bodies are small; anything larger is refused with 413. */
const BODY_LIMIT_BYTES = 256 * 1024;

export async function createControlPlane(config: ControlPlaneConfig, store: LoadStore, events = true, declared: DeclaredInstance[] = []): Promise<NestFastifyApplication> {
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config, store, events, declared), new FastifyAdapter({ bodyLimit: BODY_LIMIT_BYTES, requestIdHeader: 'x-request-id' }), {
    bufferLogs: true,
  });
  app.useLogger(app.get(PinoLogger));
  if (!config.ADMIN_TOKEN) {
    new Logger('security').warn('ADMIN_TOKEN is not set: the admin API is open to anyone who can reach this port');
  }
  return app;
}
