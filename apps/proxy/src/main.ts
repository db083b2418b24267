import { Logger } from '@nestjs/common';
import pino from 'pino';
import { configFileFrom, configOrExit } from '@switchyard/config';
import { onStopSignals, serverArgsOrExit } from '@switchyard/entry-point';
import { RedisLoadStore } from '@switchyard/load-store';
import { PinoNestLogger } from '@switchyard/nest-common';
import { createProxyApp, loadProxyConfig, proxyConfigWarnings } from '@switchyard/proxy-core';
import { proxyHelp } from './help';

async function main() {
  const args = serverArgsOrExit(process.argv.slice(2), proxyHelp);
  // The one place the proxy's configuration is read: the environment over the config file.
  const config = configOrExit(() => loadProxyConfig(process.env, configFileFrom(args.config)));

  const log = pino({ level: config.LOG_LEVEL, base: { app: 'proxy' } });
  Logger.overrideLogger(new PinoNestLogger(log));
  for (const w of proxyConfigWarnings(config)) log.warn(w);
  // Short timeouts and no offline queue: on the request path a Redis blink means local routing, not waiting.
  const store = new RedisLoadStore({ url: config.REDIS_URL, commandTimeoutMs: 200, offlineQueue: false, connectionName: `switchyard-proxy-${config.PROXY_NAME}` });
  const proxy = await createProxyApp(config, store, { eventsUrl: config.REDIS_URL });
  await proxy.listen(config.PORT, config.HOST);
  proxy.runtime.logger.info(`proxy ${proxy.runtime.proxyId} listening on http://${config.HOST}:${config.PORT} (strategy ${config.ROUTING_STRATEGY})`);
  // SIGTERM drains; a second SIGTERM, or SIGINT, skips the settle window.
  onStopSignals({
    stop: () => proxy.drain().then(() => store.close()),
    onSignal: (signal, repeated) => {
      if (repeated || signal === 'SIGINT') proxy.skipSettle();
    },
    onError: (err) => proxy.runtime.logger.error({ err }, 'drain failed'),
  });
}

main().catch((err: unknown) => {
  pino({ base: { app: 'proxy' } }).fatal({ err }, 'start failed');
  process.exit(1);
});
