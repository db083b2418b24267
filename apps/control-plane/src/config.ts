import { parseEnv } from '@switchyard/config';
import { z } from 'zod';

const schema = z.object({
  PORT: z.coerce.number().int().min(1).max(65535).default(8081),
  HOST: z.string().min(1).default('127.0.0.1'),
  REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL').default('redis://127.0.0.1:6379'),
  ADMIN_TOKEN: z.string().min(1).optional(),
  INSTANCE_TTL_S: z.coerce.number().int().min(1).max(86_400).default(30),
  /** How often expired proxy leases are reaped; fractions allowed so tests and small fleets can sweep faster. */
  LEASE_SWEEP_S: z.coerce.number().min(0.1).max(3600).default(1),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type ControlPlaneConfig = z.infer<typeof schema>;

export function loadControlPlaneConfig(env: NodeJS.ProcessEnv = process.env): ControlPlaneConfig {
  return parseEnv(schema, env);
}
