import { configOrExit } from '@switchyard/config';
import { RedisLoadStore } from '@switchyard/load-store';
import { createProxyApp, loadProxyConfig } from '@switchyard/proxy-core';

async function main() {
  const config = configOrExit(() => loadProxyConfig());
  // Short timeouts and no offline queue: on the request path a Redis blink means local routing, not waiting.
  const store = new RedisLoadStore({ url: config.REDIS_URL, commandTimeoutMs: 200, offlineQueue: false, connectionName: `switchyard-proxy-${config.PROXY_NAME}` });
  const proxy = await createProxyApp(config, store, { eventsUrl: config.REDIS_URL });
  await proxy.listen(config.PORT, config.HOST);
  console.log(`proxy ${proxy.runtime.proxyId} listening on http://${config.HOST}:${config.PORT} (strategy ${config.ROUTING_STRATEGY})`);
  const stop = () => void proxy.close().then(() => store.close()).then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

void main();
