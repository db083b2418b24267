import { ConfigFile, parseSettings } from '@switchyard/config';
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
  /** How often every instance's /health (and /metrics) is probed; fractions allowed. */
  PROBE_INTERVAL_S: z.coerce.number().min(0.2).max(3600).default(5),
  /** A probe that has not answered by then has failed; also bounds each /metrics scrape. */
  PROBE_TIMEOUT_S: z.coerce.number().min(0.05).max(60).default(2),
  /** An instance whose engine reports kv_cache_usage at or over this is chosen only when every candidate is; 1 turns the guard off. */
  KV_CACHE_GUARD: z.coerce.number().min(0).max(1).default(0.97),
});

export type ControlPlaneConfig = z.infer<typeof schema>;

/** The environment over the config file's `control_plane` section. */
export function loadControlPlaneConfig(env: NodeJS.ProcessEnv = process.env, file?: ConfigFile): ControlPlaneConfig {
  return parseSettings(schema, env, file, ['control_plane']);
}
