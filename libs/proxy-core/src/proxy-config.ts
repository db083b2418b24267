import { parseEnv } from '@switchyard/config';
import { parseStrategy, STRATEGY_NAMES, Strategy } from '@switchyard/routing';
import { z } from 'zod';

const schema = z.object({
  PORT: z.coerce.number().int().min(1).max(65535).default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL').default('redis://127.0.0.1:6379'),
  ROUTING_STRATEGY: z
    .string()
    .default('least_load')
    .refine((v) => parseStrategy(v) !== undefined, { message: `unknown strategy; valid names: ${STRATEGY_NAMES.join(', ')}` })
    .transform((v) => parseStrategy(v) as Strategy),
  MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(16 * 1024 * 1024),
  UPSTREAM_TIMEOUT_S: z.coerce.number().positive().max(3600).default(600),
  MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  FAILURE_COOLDOWN_S: z.coerce.number().min(0).max(3600).default(5),
  LEASE_TTL_S: z.coerce.number().positive().max(3600).default(10),
  REGISTRY_RESYNC_S: z.coerce.number().positive().max(3600).default(2),
  RECONCILE_S: z.coerce.number().positive().max(3600).default(5),
  PROXY_NAME: z.string().min(1).default('proxy'),
});

export type ProxyConfig = z.infer<typeof schema>;

export function loadProxyConfig(env: NodeJS.ProcessEnv = process.env): ProxyConfig {
  return parseEnv(schema, env);
}
