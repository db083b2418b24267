import { configFilePath, configOrExit, declaredInstances, readConfigFile } from '@switchyard/config';
import { RedisLoadStore } from '@switchyard/load-store';
import { createControlPlane } from './bootstrap';
import { loadControlPlaneConfig } from './config';

async function main() {
  const { config, declared } = configOrExit(() => {
    const path = configFilePath();
    const file = path ? readConfigFile(path) : undefined;
    return { config: loadControlPlaneConfig(process.env, file), declared: declaredInstances(process.env, file) };
  });
  const store = new RedisLoadStore({ url: config.REDIS_URL, commandTimeoutMs: 2000, connectionName: 'switchyard-control-plane' });
  const app = await createControlPlane(config, store, true, declared);
  await app.listen(config.PORT, config.HOST);
  console.log(`control plane listening on http://${config.HOST}:${config.PORT}`);
}

void main();
