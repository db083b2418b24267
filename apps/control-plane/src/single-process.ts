import { configFilePath, configOrExit, declaredInstances, readConfigFile } from '@switchyard/config';
import { Logger } from '@nestjs/common';
import { LoadStore, MemoryLoadStore, RedisLoadStore } from '@switchyard/load-store';
import { createProxyApp, loadProxyConfig } from '@switchyard/proxy-core';
import { loadSimConfig, RegistrationAgent, SimServer } from '@switchyard/sim';
import { createControlPlane } from './bootstrap';
import { loadControlPlaneConfig } from './config';

/**
 * `npm start`: control plane and proxy in one process, on the memory store unless
 * REDIS_URL is set; with no INSTANCES it runs two simulated instances so a first
 * request gets an answer.
 */
async function main() {
  const log = new Logger('switchyard');
  const redisUrl = process.env.REDIS_URL || undefined;
  const env = { ...process.env, REDIS_URL: redisUrl };
  const path = configOrExit(() => configFilePath());
  const file = path ? configOrExit(() => readConfigFile(path)) : undefined;
  const cpConfig = configOrExit(() => loadControlPlaneConfig({ ...env, PORT: process.env.CONTROL_PLANE_PORT ?? '8081' }, file));
  const proxyConfig = configOrExit(() => loadProxyConfig(env, file));
  const declared = configOrExit(() => declaredInstances(env, file));
  const simBasePort = configOrExit(() => {
    const port = Number(process.env.SIM_BASE_PORT ?? 9001);
    if (!Number.isInteger(port) || port < 1 || port > 65534) throw new Error('invalid configuration: SIM_BASE_PORT: must be a port number');
    return port;
  });
  const store: LoadStore = redisUrl
    ? new RedisLoadStore({ url: cpConfig.REDIS_URL, connectionName: 'switchyard-single' })
    : new MemoryLoadStore();
  log.log(redisUrl ? `store: Redis at ${cpConfig.REDIS_URL}` : 'store: in-memory (single process; set REDIS_URL to share counts)');

  const cp = await createControlPlane(cpConfig, store, redisUrl !== undefined, declared);
  await cp.listen(cpConfig.PORT, cpConfig.HOST);
  const cpUrl = `http://${cpConfig.HOST}:${cpConfig.PORT}`;

  const sims: SimServer[] = [];
  const agents: RegistrationAgent[] = [];
  if (declared.length) {
    log.log(`${declared.length} declared instances (INSTANCES or the config file): registered and probed by the control plane`);
  } else {
    for (let i = 0; i < 2; i++) {
      const port = simBasePort + i;
      const simConfig = loadSimConfig({ PORT: String(port), INSTANCE_ID: `sim-${i + 1}`, CONTROL_PLANE_URL: cpUrl, ADMIN_TOKEN: cpConfig.ADMIN_TOKEN });
      const sim = new SimServer(simConfig);
      await sim.listen(port, '127.0.0.1');
      const agent = new RegistrationAgent(simConfig, sim, `http://127.0.0.1:${port}`);
      await agent.start();
      sims.push(sim);
      agents.push(agent);
    }
    log.log(`no instances configured: started 2 simulated instances (model sim-llama) on ports ${simBasePort} and ${simBasePort + 1}`);
  }

  const proxy = await createProxyApp(proxyConfig, store, { eventsUrl: redisUrl });
  await proxy.listen(proxyConfig.PORT, proxyConfig.HOST);
  log.log(`gateway ready: proxy http://${proxyConfig.HOST}:${proxyConfig.PORT}/v1, control plane ${cpUrl}`);

  const stop = async () => {
    await proxy.close();
    agents.forEach((a) => a.stop());
    await Promise.all(sims.map((s) => s.close()));
    await cp.close();
    await store.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}

void main();
