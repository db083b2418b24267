import 'reflect-metadata';
import http from 'node:http';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { LoadStore } from '@switchyard/load-store';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorBody } from '@switchyard/contracts';
import { Forwarder, sendError } from '../forwarder';
import { FORWARDED_ROUTES } from '../routes';
import { CorsPolicy } from '../cors';
import type { ProxyConfig } from '../proxy-config';
import { ProxyRuntime, ProxyRuntimeOptions } from '../proxy-runtime';
import { ProxyModule } from './proxy.module';

const SHELL_ROUTES = new Set(['/healthz', '/readyz', '/metrics', '/v1/models']);

/** Unknown paths and methods fold into one label each, so clients cannot blow up the series count. */
const routeLabel = (path: string) => (FORWARDED_ROUTES.has(path) || SHELL_ROUTES.has(path) ? path : path.startsWith('/v1/models/') ? '/v1/models/{id}' : 'unmatched');
/** Where browsers may call (CORS_ORIGINS): the OpenAI routes. */
const openAiPath = (path: string) => FORWARDED_ROUTES.has(path) || path === '/v1/models' || path.startsWith('/v1/models/');
const methodLabel = (method: string | undefined) => (method === 'GET' || method === 'POST' ? method : 'other');

export interface ProxyApp {
  readonly runtime: ProxyRuntime;
  readonly app: NestFastifyApplication;
  listen(port: number, host: string): Promise<void>;
  /**
   * Graceful drain (SIGTERM): not ready at once; keeps accepting for DRAIN_SETTLE_S
   * (unless `skipSettle()` is called: a second signal); then refuses new work and waits
   * for every open exchange, up to DRAIN_TIMEOUT_S, after which it ends what is left.
   * Resolves when the proxy is closed and its lease dropped.
   */
  drain(): Promise<void>;
  skipSettle(): void;
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
  const log = (msg: string) => runtime.logger.info(msg);
  const cors = new CorsPolicy(config.CORS_ORIGINS);
  let refusing = false;
  let server: http.Server | undefined;
  const serverFactory = (fastifyHandler: http.RequestListener) =>
    (server = http.createServer((req, res) => {
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const path = q < 0 ? url : url.slice(0, q);
      const forwarded = req.method === 'POST' && FORWARDED_ROUTES.has(path);
      // Every response by route, method and status (499: the client left first); an access log line for forwarded ones.
      const exchange = runtime.exchanges.begin(req, res, (ex) => {
        runtime.metrics.countRequest(routeLabel(path), methodLabel(req.method), ex.status);
        runtime.stats.record(ex);
        if (forwarded) {
          runtime.metrics.observeExchange(ex, runtime.metrics.series(ex.model, ex.model !== null && runtime.registry.hasModel(ex.model)));
          runtime.tracing?.end(ex, config.ROUTING_STRATEGY);
          forwarder.log(ex, path);
        }
      });
      if (refusing) {
        // Past the settle window: kept-alive connections get a clear answer and are closed.
        res.shouldKeepAlive = false;
        return sendError(res, 503, errorBody('the proxy is draining; retry on another', 'service_unavailable', 'draining'), { 'retry-after': '1', connection: 'close' });
      }
      if (cors.enabled && openAiPath(path)) {
        if (req.method === 'OPTIONS') return cors.preflight(req, res);
        cors.decorate(req, res);
      }
      if (forwarded) {
        // A bug on one request must never take the process and every open stream with it.
        return void forwarder.handle(exchange, path).catch((err: Error) => {
          runtime.logger.error({ err, route: path }, 'request handler failed');
          if (!res.headersSent) sendError(res, 500, errorBody('internal error', 'server_error', null));
          else res.destroy();
        });
      }
      fastifyHandler(req, res);
    }));
  const adapter = new FastifyAdapter({ serverFactory: serverFactory as never });
  const app = await NestFactory.create<NestFastifyApplication>(ProxyModule.forRoot(runtime), adapter, { logger: ['warn', 'error'] });
  const settle = new AbortController();
  let drained: Promise<void> | undefined;
  const close = async () => {
    await app.close();
    await runtime.stop();
    await forwarder.close();
  };
  const drain = async () => {
    runtime.draining = true;
    await runtime.renewLease();
    log(`draining: not ready; accepting for ${config.DRAIN_SETTLE_S} s more`);
    await sleep(config.DRAIN_SETTLE_S * 1000, undefined, { signal: settle.signal }).catch(() => undefined);
    refusing = true;
    server?.close();
    server?.closeIdleConnections();
    const deadline = Date.now() + config.DRAIN_TIMEOUT_S * 1000;
    let nextLog = Date.now() + 5000;
    log(`draining: refusing new work; waiting for ${runtime.exchanges.open} open exchange(s)`);
    while (runtime.exchanges.open > 0 && Date.now() < deadline) {
      await sleep(50);
      server?.closeIdleConnections();
      if (Date.now() >= nextLog) {
        nextLog += 5000;
        log(`draining: ${runtime.exchanges.open} open exchange(s)`);
      }
    }
    if (runtime.exchanges.open > 0) {
      log(`draining: DRAIN_TIMEOUT_S (${config.DRAIN_TIMEOUT_S} s) passed with ${runtime.exchanges.open} open; ending them`);
      forwarder.abortAll();
      const end = Date.now() + 2000;
      while (runtime.exchanges.open > 0 && Date.now() < end) await sleep(20);
    }
    await close();
    log('drained');
  };
  return {
    runtime,
    app,
    async listen(port, host) {
      await runtime.start();
      await app.listen(port, host);
    },
    drain() {
      drained ??= drain();
      return drained;
    },
    skipSettle() {
      settle.abort();
    },
    close,
  };
}
