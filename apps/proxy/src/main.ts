import cluster from 'node:cluster';
import { configOrExit } from '@switchyard/config';
import { RedisLoadStore } from '@switchyard/load-store';
import { createProxyApp, loadProxyConfig, ProxyConfig, proxyConfigWarnings } from '@switchyard/proxy-core';

/** One proxy: its own id, lease, counts and store connection. With WORKERS=N, each worker runs one. */
async function serve(config: ProxyConfig, worker?: number) {
  const name = worker ? `${config.PROXY_NAME}-w${worker}` : config.PROXY_NAME;
  // Short timeouts and no offline queue: on the request path a Redis blink means local routing, not waiting.
  // Auto-pipelining: the acquires and releases of concurrent requests share writes (profiled: a socket write per script call was the largest cost after the HTTP writes).
  const store = new RedisLoadStore({ url: config.REDIS_URL, commandTimeoutMs: 200, offlineQueue: false, autoPipelining: true, connectionName: `switchyard-proxy-${name}` });
  const proxy = await createProxyApp({ ...config, PROXY_NAME: name }, store, { eventsUrl: config.REDIS_URL, worker });
  await proxy.listen(config.PORT, config.HOST);
  console.log(`proxy ${proxy.runtime.proxyId} listening on http://${config.HOST}:${config.PORT} (strategy ${config.ROUTING_STRATEGY})`);
  // SIGTERM drains; a second SIGTERM, or SIGINT, skips the settle window.
  let draining = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (draining || signal === 'SIGINT') proxy.skipSettle();
    if (draining) return;
    draining = true;
    void proxy
      .drain()
      .then(() => store.close())
      .then(() => process.exit(0));
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

/** The primary of WORKERS=N: forks the workers (node:cluster shares the one port), restarts one that dies, passes signals on, exits when all have drained. */
function supervise(config: ProxyConfig) {
  let stopping = false;
  let failed = false;
  const fork = () => cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (code !== 0) failed = true;
    if (!stopping) {
      console.error(`worker ${worker.id} exited (${code ?? signal}); starting another in 1 s`);
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
  console.log(`proxy: ${config.WORKERS} workers on http://${config.HOST}:${config.PORT}`);
}

function main() {
  const config = configOrExit(() => loadProxyConfig());
  if (cluster.isPrimary) for (const w of proxyConfigWarnings(config)) console.warn(`warning: ${w}`);
  if (config.WORKERS > 1 && cluster.isPrimary) return supervise(config);
  void serve(config, cluster.isWorker ? cluster.worker?.id : undefined);
}

main();
