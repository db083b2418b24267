import { configOrExit } from '@switchyard/config';
import { RedisLoadStore } from '@switchyard/load-store';
import { loadProxyConfig, ProxyServer } from '@switchyard/proxy-core';


async function main() {
  const config = configOrExit(() => loadProxyConfig());
  const store = new RedisLoadStore({ url: config.REDIS_URL, commandTimeoutMs: 200, connectionName: 'switchyard-proxy' });
  const proxy = new ProxyServer(config, store);
  await proxy.listen(config.PORT, config.HOST);
  console.log(`proxy ${proxy.proxyId} listening on http://${config.HOST}:${config.PORT} (strategy ${config.ROUTING_STRATEGY})`);
  const stop = () => void proxy.close().then(() => store.close()).then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

void main();
