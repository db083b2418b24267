import pino from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import { configOrExit } from '@switchyard/config';
import { onStopSignals, serverArgsOrExit } from '@switchyard/entry-point';
import { loadSimConfig, RegistrationAgent, SimServer } from '@switchyard/sim';
import { simHelp } from './help';

const log = pino({ base: { app: 'sim-instance' } });

async function main() {
  serverArgsOrExit(process.argv.slice(2), simHelp);
  // The one place the sim's configuration is read.
  const config = configOrExit(() => loadSimConfig());

  const sim = new SimServer(config);
  await sim.listen(config.PORT, config.HOST);
  const url = config.ADVERTISE_URL ?? `http://${config.HOST}:${config.PORT}`;
  log.info(`sim instance serving ${config.MODEL} on ${url} (max batch ${config.MAX_BATCH})`);
  const agent = config.CONTROL_PLANE_URL ? new RegistrationAgent(config, sim, url) : undefined;
  const stopped = new AbortController();
  onStopSignals({
    stop: async () => {
      stopped.abort();
      agent?.stop();
      await sim.close();
    },
    onError: (err) => log.error({ err }, 'stop failed'),
  });
  if (agent) await registerUntilAccepted(agent, stopped.signal);
}

/**
 * A sim may start before its control plane listens (compose, Kubernetes): it retries, backing off
 * to 5 s. A 4xx (a wrong ADMIN_TOKEN, a bad registration) will not heal by waiting: exit 1.
 */
async function registerUntilAccepted(agent: RegistrationAgent, stopped: AbortSignal): Promise<void> {
  for (let delayMs = 250; !stopped.aborted; delayMs = Math.min(delayMs * 2, 5000)) {
    try {
      await agent.start();
      log.info('registered with the control plane');
      return;
    } catch (err) {
      const message = (err as Error).message;
      if (/^registration failed: 4\d\d/.test(message)) {
        log.fatal(`${message}: check ADMIN_TOKEN and the registration`);
        process.exit(1);
      }
      log.warn(`control plane not reachable yet (${message}); retrying in ${delayMs} ms`);
      await sleep(delayMs, undefined, { signal: stopped }).catch(() => undefined);
    }
  }
}

main().catch((err: unknown) => {
  log.fatal({ err }, 'start failed');
  process.exit(1);
});
