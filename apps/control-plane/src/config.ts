import { ConfigFile, logTimeSchema, parseSettings } from '@switchyard/config';
import { z } from 'zod';

export const ADMIN_ROLES = ['read', 'admin'] as const;
/** `read`: the debug view, the dashboard's data and every GET of the admin API; `admin`: those and every change. */
export type AdminRole = (typeof ADMIN_ROLES)[number];

export interface AdminToken {
  name: string;
  role: AdminRole;
  token: string;
}

const TOKEN_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const TOKEN_VALUE = /^[\x21-\x2B\x2D-\x7E]{16,512}$/;

/**
 * `name:role:token,name:role:token`. Messages name the entry by position and name, never the
 * token: a configuration error is printed and logged.
 */
const adminTokensSchema = z.string().transform((raw, ctx): AdminToken[] => {
  const out: AdminToken[] = [];
  const entries = raw.split(',').map((s) => s.trim());
  for (const [i, entry] of entries.entries()) {
    const [name = '', role = '', ...rest] = entry.split(':');
    const token = rest.join(':');
    const fail = (message: string) => ctx.addIssue({ code: z.ZodIssueCode.custom, message: `entry ${i + 1}${TOKEN_NAME.test(name) ? ` (${name})` : ''}: ${message}` });
    if (!TOKEN_NAME.test(name)) fail('name must be 1-64 characters of A-Z a-z 0-9 _ . - (entries are name:role:token, comma-separated)');
    else if (!(ADMIN_ROLES as readonly string[]).includes(role)) fail(`role must be ${ADMIN_ROLES.join(' or ')}`);
    else if (!TOKEN_VALUE.test(token)) fail('token must be 16-512 printable characters without spaces or commas');
    else if (out.some((t) => t.name === name)) fail('name used twice');
    else if (out.some((t) => t.token === token)) fail('token used twice');
    else out.push({ name, role: role as AdminRole, token });
  }
  return out;
});

const LOOPBACK_HOSTS = new Set(['localhost', '::1', '[::1]']);

/** Only a loopback listen address keeps the admin API out of reach of the network. */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_HOSTS.has(host.toLowerCase()) || /^127(\.\d{1,3}){3}$/.test(host);
}

const schema = z
  .object({
    PORT: z.coerce.number().int().min(1).max(65535).default(8081),
    HOST: z.string().min(1).default('127.0.0.1'),
    REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL').default('redis://127.0.0.1:6379'),
  /** REDIS_URL is a seed node of a Redis Cluster; each routing pool is one hash slot. */
  REDIS_CLUSTER: z.enum(['true', 'false'], { message: 'must be true or false' }).default('false').transform((v) => v === 'true'),
    ADMIN_TOKEN: z.string().min(1).optional(),
    /** More tokens, each with a role; ADMIN_TOKEN stays an `admin` token beside them. */
    ADMIN_TOKENS: adminTokensSchema.optional(),
    /** Deliberately serve the admin API without a token on a non-loopback HOST. */
    ALLOW_OPEN_ADMIN: z.enum(['true', 'false']).default('false').transform((v) => v === 'true'),
    INSTANCE_TTL_S: z.coerce.number().int().min(1).max(86_400).default(30),
    /** How often expired proxy leases are reaped; fractions allowed so tests and small fleets can sweep faster. */
    LEASE_SWEEP_S: z.coerce.number().min(0.1).max(3600).default(1),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    LOG_TIME: logTimeSchema,
    /** How often every instance's /health (and /metrics) is probed; fractions allowed. */
    PROBE_INTERVAL_S: z.coerce.number().min(0.2).max(3600).default(5),
    /** A probe that has not answered by then has failed; also bounds each /metrics scrape. */
    PROBE_TIMEOUT_S: z.coerce.number().min(0.05).max(60).default(2),
    /** An instance whose engine reports kv_cache_usage at or over this is chosen only when every candidate is; 1 turns the guard off. */
    KV_CACHE_GUARD: z.coerce.number().min(0).max(1).default(0.97),
  })
  .superRefine((c, ctx) => {
    // Closed by default: an admin API reachable from the network without a token lets anyone register an instance and receive every prompt.
    if (!c.ADMIN_TOKEN && !c.ADMIN_TOKENS?.length && !isLoopbackHost(c.HOST) && !c.ALLOW_OPEN_ADMIN) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        path: ['ADMIN_TOKEN'],
        message: `required when HOST (${c.HOST}) is not a loopback address: set ADMIN_TOKEN (or ADMIN_TOKENS), or ALLOW_OPEN_ADMIN=true to serve the admin API to anyone who can reach it`,
      });
    }
  });

export type ControlPlaneConfig = z.infer<typeof schema>;

/** The environment over the config file's `control_plane` section. */
export function loadControlPlaneConfig(env: NodeJS.ProcessEnv = process.env, file?: ConfigFile): ControlPlaneConfig {
  return parseSettings(schema, env, file, ['control_plane']);
}

/** Every token the control plane accepts: ADMIN_TOKEN (role admin, named `admin_token`) and ADMIN_TOKENS. */
export function adminTokens(config: ControlPlaneConfig): AdminToken[] {
  const fromList = config.ADMIN_TOKENS ?? [];
  return config.ADMIN_TOKEN ? [{ name: 'admin_token', role: 'admin', token: config.ADMIN_TOKEN }, ...fromList] : fromList;
}

/** The token agents started in this process (npm start's simulated instances) register with. */
export function agentToken(config: ControlPlaneConfig): string | undefined {
  return adminTokens(config).find((t) => t.role === 'admin')?.token;
}
