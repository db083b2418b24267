import { configOrExit } from '@switchyard/config';
import { RedisLoadStore } from '@switchyard/load-store';
import { createControlPlane } from './bootstrap';
import { loadControlPlaneConfig } from './config';

async function main() {
  const config = configOrExit(() => loadControlPlaneConfig());
  const store = new RedisLoadStore({ url: config.REDIS_URL, commandTimeoutMs: 2000, connectionName: 'switchyard-control-plane' });
  const app = await createControlPlane(config, store);
  await app.listen(config.PORT, config.HOST);
  console.log(`control plane listening on http://${config.HOST}:${config.PORT}`);
}

void main();
