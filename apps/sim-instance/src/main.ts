import pino from 'pino';
import { configFileFrom, configOrExit } from '@switchyard/config';
import { onStopSignals, serverArgsOrExit } from '@switchyard/entry-point';
import { loadSimConfig, RegistrationAgent, RegistrationRefused, SimServer } from '@switchyard/sim';
import { simHelp } from './help';

const log = pino({ base: { app: 'sim-instance' } });

async function main() {
  const args = serverArgsOrExit(process.argv.slice(2), simHelp);
  // The one place the sim's configuration is read.
  const config = configOrExit(() => loadSimConfig(process.env, configFileFrom(args.config)));

  const sim = new SimServer(config);
  await sim.listen(config.PORT, config.HOST);
  const url = config.ADVERTISE_URL ?? `http://${config.HOST}:${config.PORT}`;
  log.info(`sim instance serving ${config.MODEL} on ${url} (max batch ${config.MAX_BATCH})`);
  // The agent retries while the control plane is not up yet (compose, Kubernetes), backing off.
  const agent = config.CONTROL_PLANE_URL ? new RegistrationAgent(config, sim, url, (line) => log.info(line)) : undefined;
  onStopSignals({
    stop: async () => {
      agent?.stop();
      await sim.close();
    },
    onError: (err) => log.error({ err }, 'stop failed'),
  });
  try {
    await agent?.start();
  } catch (err) {
    if ((err as Error).name === 'AbortError') return;
    // A refusal (a wrong ADMIN_TOKEN, a bad registration) will not heal by waiting.
    log.fatal(err instanceof RegistrationRefused ? `${(err as Error).message}: check ADMIN_TOKEN and the registration` : (err as Error).message);
    process.exit(1);
  }
}

main().catch((err: unknown) => {
  log.fatal({ err }, 'start failed');
  process.exit(1);
});
