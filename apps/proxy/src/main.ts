import cluster from 'node:cluster';
import { Logger } from '@nestjs/common';
import pino from 'pino';
import { configFileFrom, configOrExit, logTimestamp } from '@switchyard/config';
import { onStopSignals, serverArgsOrExit } from '@switchyard/entry-point';
import { sharedStore } from '@switchyard/load-store';
import { PinoNestLogger } from '@switchyard/nest-common';
import { createProxyApp, loadProxyConfig, ProxyConfig, proxyConfigWarnings, startTracing } from '@switchyard/proxy-core';
import { proxyHelp } from './help';

/** One proxy: its own id, lease, counts and store connection. With WORKERS=N, each worker runs one. */
async function serve(config: ProxyConfig, log: pino.Logger, worker?: number) {
  const name = worker ? `${config.PROXY_NAME}-w${worker}` : config.PROXY_NAME;
  // Short timeouts and no offline queue: on the request path a Redis blink means local routing, not waiting.
  // Auto-pipelining: the acquires and releases of concurrent requests share writes (profiled: a socket write per script call was the largest cost after the HTTP writes).
  const store = sharedStore({ url: config.REDIS_URL, cluster: config.REDIS_CLUSTER, commandTimeoutMs: 200, offlineQueue: false, autoPipelining: false, connectionName: `switchyard-proxy-${name}` });
  // Traces when OTEL_EXPORTER_OTLP_ENDPOINT is set (the standard OTEL_* variables); the SDK is not loaded otherwise.
  const tracing = await startTracing(process.env);
  const proxy = await createProxyApp({ ...config, PROXY_NAME: name }, store, { eventsUrl: config.REDIS_URL, worker, tracing });
  await proxy.listen(config.PORT, config.HOST);
  proxy.runtime.logger.info(`proxy ${proxy.runtime.proxyId} listening on http://${config.HOST}:${config.PORT} (strategy ${config.ROUTING_STRATEGY})`);
  // SIGTERM drains; a second SIGTERM, or SIGINT, skips the settle window.
  onStopSignals({
    stop: () => proxy.drain().then(() => Promise.all([store.close(), tracing?.shutdown()])).then(() => undefined),
    onSignal: (signal, repeated) => {
      if (repeated || signal === 'SIGINT') proxy.skipSettle();
    },
    onError: (err) => log.error({ err }, 'drain failed'),
  });
}

/** The primary of WORKERS=N: forks the workers (node:cluster shares the one port), restarts one that dies, passes signals on, exits when all have drained. */
function supervise(config: ProxyConfig, log: pino.Logger) {
  let stopping = false;
  let failed = false;
  const fork = () => cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (code !== 0) failed = true;
    if (!stopping) {
      log.error(`worker ${worker.id} exited (${code ?? signal}); starting another in 1 s`);
      setTimeout(fork, 1000);
      return;
    }
    if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(failed ? 1 : 0);
  });
  for (let i = 0; i < config.WORKERS; i++) fork();
  const onSignal = (signal: NodeJS.Signals) => {
    stopping = true;
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill(signal);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  log.info(`proxy: ${config.WORKERS} workers on http://${config.HOST}:${config.PORT}`);
}

function main() {
  const args = serverArgsOrExit(process.argv.slice(2), proxyHelp);
  // The one place the proxy's configuration is read: the environment over the config file.
  const config = configOrExit(() => loadProxyConfig(process.env, configFileFrom(args.config)));
  const log = pino({ level: config.LOG_LEVEL, base: { app: 'proxy' }, timestamp: logTimestamp(config.LOG_TIME) });
  Logger.overrideLogger(new PinoNestLogger(log));
  if (cluster.isPrimary) for (const w of proxyConfigWarnings(config)) log.warn(w);
  if (config.WORKERS > 1 && cluster.isPrimary) return supervise(config, log);
  serve(config, log, cluster.isWorker ? cluster.worker?.id : undefined).catch((err: unknown) => {
    log.fatal({ err }, 'start failed');
    process.exit(1);
  });
}

main();
