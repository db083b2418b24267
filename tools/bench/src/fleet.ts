import { DEFAULT_ENDPOINTS } from '@switchyard/contracts';
import { RedisLoadStore } from '@switchyard/load-store';
import { freePort, RedisServer } from '@switchyard/testing';
import { postJson, until } from './http-util';
import type { Proc, ProcessGroup } from './procs';

/** Starting Switchyard's pieces as real processes, as an operator would. */

export async function startRedis(group: ProcessGroup): Promise<RedisServer> {
  const redis = await new RedisServer().start();
  group.onStop(() => redis.stop());
  return redis;
}

export interface Endpoint {
  url: string;
  port: number;
  proc: Proc;
}

export async function startControlPlane(group: ProcessGroup, redisUrl: string, name = 'control-plane'): Promise<Endpoint> {
  const port = await freePort();
  // Instances registered by the harness send no heartbeats: a long TTL keeps them alive for the whole run.
  const proc = group.node(name, 'apps/control-plane/src/main.ts', { PORT: String(port), HOST: '127.0.0.1', REDIS_URL: redisUrl, INSTANCE_TTL_S: '86400' });
  await group.waitForPort(proc, port);
  return { url: `http://127.0.0.1:${port}`, port, proc };
}

export interface InstanceSpec {
  instance_id: string;
  url: string;
  models: string[];
}

/** Registration through the control plane's admin API. */
export async function registerViaControlPlane(cpUrl: string, instances: InstanceSpec[]): Promise<void> {
  for (const inst of instances) await postJson(`${cpUrl}/v1/instances`, inst);
}

/** Registration written straight into a Redis no control plane watches (the per-proxy private stores). */
export async function registerInRedis(redisUrl: string, instances: InstanceSpec[]): Promise<void> {
  const store = new RedisLoadStore({ url: redisUrl, connectionName: 'switchyard-bench' });
  try {
    for (const inst of instances) {
      await store.register({ ...inst, endpoints: [...DEFAULT_ENDPOINTS], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 86_400 });
    }
  } finally {
    await store.close();
  }
}

export async function startProxy(group: ProcessGroup, name: string, redisUrl: string, strategy: string, env: Record<string, string> = {}): Promise<Endpoint> {
  const port = await freePort();
  const proc = group.node(name, 'apps/proxy/src/main.ts', { PORT: String(port), HOST: '127.0.0.1', REDIS_URL: redisUrl, ROUTING_STRATEGY: strategy, PROXY_NAME: name, ...env });
  await group.waitForPort(proc, port);
  const url = `http://127.0.0.1:${port}`;
  await until(`${name} /readyz`, async () => (await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) })).status === 200);
  return { url, port, proc };
}
