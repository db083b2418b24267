import 'reflect-metadata';
import http from 'node:http';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { LoadStore } from '@switchyard/load-store';
import { FORWARDED_ROUTES, Forwarder } from '../forwarder';
import type { ProxyConfig } from '../proxy-config';
import { ProxyRuntime, ProxyRuntimeOptions } from '../proxy-runtime';
import { ProxyModule } from './proxy.module';

export interface ProxyApp {
  readonly runtime: ProxyRuntime;
  readonly app: NestFastifyApplication;
  listen(port: number, host: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * Builds a proxy: Nest wires health, readiness, models and metrics on Fastify,
 * while the OpenAI routes go straight from node's http server to the forwarder,
 * outside any framework. Every exchange is counted at this edge, before any handler.
 */
export async function createProxyApp(config: ProxyConfig, store: LoadStore, options: ProxyRuntimeOptions = {}): Promise<ProxyApp> {
  const runtime = new ProxyRuntime(config, store, options);
  const forwarder = new Forwarder(runtime);
  const serverFactory = (fastifyHandler: http.RequestListener) =>
    http.createServer((req, res) => {
      runtime.inflightHttp += 1;
      res.once('close', () => (runtime.inflightHttp -= 1));
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const path = q < 0 ? url : url.slice(0, q);
      if (req.method === 'POST' && FORWARDED_ROUTES.has(path)) return void forwarder.handle(req, res, path);
      fastifyHandler(req, res);
    });
  const adapter = new FastifyAdapter({ serverFactory: serverFactory as never });
  const app = await NestFactory.create<NestFastifyApplication>(ProxyModule.forRoot(runtime), adapter, { logger: ['warn', 'error'] });
  return {
    runtime,
    app,
    async listen(port, host) {
      await runtime.start();
      await app.listen(port, host);
    },
    async close() {
      await app.close();
      await runtime.stop();
      await forwarder.close();
    },
  };
}
