import { Logger } from '@nestjs/common';
import pino from 'pino';
import { configFileFrom, configOrExit, declaredInstances, logTimestamp } from '@switchyard/config';
import { LoadStore, MemoryLoadStore, sharedStore } from '@switchyard/load-store';
import { createProxyApp, loadProxyConfig, startTracing } from '@switchyard/proxy-core';
import { onStopSignals, serverArgsOrExit } from '@switchyard/entry-point';
import { PinoNestLogger } from '@switchyard/nest-common';
import { loadSimConfig, RegistrationAgent, SimServer } from '@switchyard/sim';
import { createControlPlane } from './bootstrap';
import { agentToken, loadControlPlaneConfig } from './config';
import { singleProcessHelp } from './help';

/**
 * `npm start`: control plane and proxy in one process, on the memory store unless
 * REDIS_URL is set; with no INSTANCES it runs two simulated instances so a first
 * request gets an answer.
 */
async function main() {
  const args = serverArgsOrExit(process.argv.slice(2), singleProcessHelp);
  // The one place this process's configuration is read: the environment over the config file.
  const env = process.env;
  const redisUrl = env.REDIS_URL || undefined;
  const file = configOrExit(() => configFileFrom(args.config));
  const cpPort = configOrExit(() => portVariable(env, 'CONTROL_PLANE_PORT', 8081));
  const simBasePort = configOrExit(() => portVariable(env, 'SIM_BASE_PORT', 9001, 65534));
  const cpConfig = configOrExit(() => loadControlPlaneConfig({ ...env, PORT: String(cpPort) }, file));
  const proxyConfig = configOrExit(() => loadProxyConfig(env, file));
  const declared = configOrExit(() => declaredInstances(env, file));

  Logger.overrideLogger(new PinoNestLogger(pino({ level: cpConfig.LOG_LEVEL, base: { app: 'switchyard' }, timestamp: logTimestamp(cpConfig.LOG_TIME) })));
  const log = new Logger('switchyard');
  const store: LoadStore = redisUrl
    ? sharedStore({ url: cpConfig.REDIS_URL, cluster: cpConfig.REDIS_CLUSTER, connectionName: 'switchyard-single' })
    : new MemoryLoadStore();
  log.log(redisUrl ? `store: Redis at ${cpConfig.REDIS_URL}` : 'store: in-memory (single process; set REDIS_URL to share counts)');

  const cp = await createControlPlane(cpConfig, store, redisUrl !== undefined, declared, file?.keys ?? []);
  await cp.listen(cpConfig.PORT, cpConfig.HOST);
  const cpUrl = `http://${cpConfig.HOST}:${cpConfig.PORT}`;

  const sims: SimServer[] = [];
  const agents: RegistrationAgent[] = [];
  if (declared.length) {
    log.log(`${declared.length} declared instances (INSTANCES or the config file): registered and probed by the control plane`);
  } else {
    for (let i = 0; i < 2; i++) {
      const port = simBasePort + i;
      const simConfig = loadSimConfig({ PORT: String(port), INSTANCE_ID: `sim-${i + 1}`, CONTROL_PLANE_URL: cpUrl, ADMIN_TOKEN: agentToken(cpConfig) });
      const sim = new SimServer(simConfig);
      await sim.listen(port, '127.0.0.1');
      const agent = new RegistrationAgent(simConfig, sim, `http://127.0.0.1:${port}`, (line) => log.log(line));
      await agent.start();
      sims.push(sim);
      agents.push(agent);
    }
    log.log(`no instances configured: started 2 simulated instances (model sim-llama) on ports ${simBasePort} and ${simBasePort + 1}`);
  }

  // Traces of the proxy's requests when OTEL_EXPORTER_OTLP_ENDPOINT is set; the SDK is not loaded otherwise.
  const tracing = await startTracing(env, 'switchyard');
  const proxy = await createProxyApp(proxyConfig, store, { eventsUrl: redisUrl, tracing });
  await proxy.listen(proxyConfig.PORT, proxyConfig.HOST);
  log.log(`gateway ready: proxy http://${proxyConfig.HOST}:${proxyConfig.PORT}/v1, control plane ${cpUrl}`);

  onStopSignals({
    stop: async () => {
      await proxy.close();
      await tracing?.shutdown();
      agents.forEach((a) => a.stop());
      await Promise.all(sims.map((s) => s.close()));
      await cp.close();
      await store.close();
    },
    onError: (err) => log.error(err),
  });
}

/** A port from the environment; a bad one stops the process naming its own variable, not the PORT it is passed on as. */
function portVariable(env: NodeJS.ProcessEnv, name: string, fallback: number, max = 65535): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > max) throw new Error(`invalid configuration: ${name}: must be a port number (1-${max}), got ${JSON.stringify(raw)}`);
  return port;
}

main().catch((err: unknown) => {
  pino({ base: { app: 'switchyard' } }).fatal({ err }, 'start failed');
  process.exit(1);
});
