import { Logger } from '@nestjs/common';
import pino from 'pino';
import { configFileFrom, configOrExit, declaredInstances, logTimestamp } from '@switchyard/config';
import { onStopSignals, serverArgsOrExit } from '@switchyard/entry-point';
import { sharedStore } from '@switchyard/load-store';
import { PinoNestLogger } from '@switchyard/nest-common';
import { createControlPlane } from './bootstrap';
import { loadControlPlaneConfig } from './config';
import { controlPlaneHelp } from './help';

async function main() {
  const args = serverArgsOrExit(process.argv.slice(2), controlPlaneHelp);
  // The one place the control plane's configuration is read: the environment over the config file.
  const { config, declared, keys } = configOrExit(() => {
    const file = configFileFrom(args.config);
    return { config: loadControlPlaneConfig(process.env, file), declared: declaredInstances(process.env, file), keys: file?.keys ?? [] };
  });

  // JSON from the first line: Nest's bootstrap messages go through pino too.
  Logger.overrideLogger(new PinoNestLogger(pino({ level: config.LOG_LEVEL, base: { app: 'control-plane' }, timestamp: logTimestamp(config.LOG_TIME) })));
  const store = sharedStore({ url: config.REDIS_URL, cluster: config.REDIS_CLUSTER, commandTimeoutMs: 2000, connectionName: 'switchyard-control-plane' });
  const app = await createControlPlane(config, store, true, declared, keys);
  await app.listen(config.PORT, config.HOST);
  const log = new Logger('control-plane');
  log.log(`control plane listening on http://${config.HOST}:${config.PORT}`);
  onStopSignals({
    stop: async (signal) => {
      log.log(`${signal}: closing`);
      await app.close();
      await store.close();
    },
    onError: (err) => log.error(err),
  });
}

main().catch((err: unknown) => {
  pino({ base: { app: 'control-plane' } }).fatal({ err }, 'start failed');
  process.exit(1);
});
