import { configOrExit } from '@switchyard/config';
import { RedisLoadStore } from '@switchyard/load-store';
import { createProxyApp, loadProxyConfig, proxyConfigWarnings } from '@switchyard/proxy-core';

async function main() {
  const config = configOrExit(() => loadProxyConfig());
  for (const w of proxyConfigWarnings(config)) console.warn(`warning: ${w}`);
  // Short timeouts and no offline queue: on the request path a Redis blink means local routing, not waiting.
  // Auto-pipelining: the acquires and releases of concurrent requests share writes (profiled: a socket write per script call was the largest cost after the HTTP writes).
  const store = new RedisLoadStore({ url: config.REDIS_URL, commandTimeoutMs: 200, offlineQueue: false, autoPipelining: true, connectionName: `switchyard-proxy-${config.PROXY_NAME}` });
  const proxy = await createProxyApp(config, store, { eventsUrl: config.REDIS_URL });
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

void main();
