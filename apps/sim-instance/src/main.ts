import { configOrExit } from '@switchyard/config';
import { loadSimConfig, RegistrationAgent, SimServer } from '@switchyard/sim';

async function main() {
  const config = configOrExit(() => loadSimConfig());
  const sim = new SimServer(config);
  await sim.listen(config.PORT, config.HOST);
  const url = config.ADVERTISE_URL ?? `http://${config.HOST}:${config.PORT}`;
  console.log(`sim instance serving ${config.MODEL} on ${url} (max batch ${config.MAX_BATCH})`);
  const agent = config.CONTROL_PLANE_URL ? new RegistrationAgent(config, sim, url) : undefined;
  const stop = () => {
    agent?.stop();
    void sim.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  try {
    await agent?.start();
  } catch (err) {
    if ((err as Error).name === 'AbortError') return;
    console.error((err as Error).message);
    process.exit(1);
  }
}

void main();
