import { availableParallelism } from 'node:os';
import { ConfigFile, logTimeSchema, parseSettings } from '@switchyard/config';
import { parseStrategy, STRATEGY_NAMES, Strategy } from '@switchyard/routing';
import { z } from 'zod';

const schema = z.object({
  PORT: z.coerce.number().int().min(1).max(65535).default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL').default('redis://127.0.0.1:6379'),
  /** REDIS_URL is a seed node of a Redis Cluster; requests route to their model's pool. */
  REDIS_CLUSTER: z.enum(['true', 'false'], { message: 'must be true or false' }).default('false').transform((v) => v === 'true'),
  ROUTING_STRATEGY: z
    .string()
    .default('least_load')
    .refine((v) => parseStrategy(v) !== undefined, { message: `unknown strategy; valid names: ${STRATEGY_NAMES.join(', ')}` })
    .transform((v) => parseStrategy(v) as Strategy),
  MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(16 * 1024 * 1024),
  // A client that stops sending mid-body would hold the exchange (and block a drain) forever.
  REQUEST_BODY_TIMEOUT_S: z.coerce.number().positive().max(3600).default(30),
  UPSTREAM_TIMEOUT_S: z.coerce.number().positive().max(3600).default(600),
  MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  FAILURE_COOLDOWN_S: z.coerce.number().min(0).max(3600).default(5),
  LEASE_TTL_S: z.coerce.number().positive().max(3600).default(10),
  REGISTRY_RESYNC_S: z.coerce.number().positive().max(3600).default(2),
  RECONCILE_S: z.coerce.number().positive().max(3600).default(5),
  PROXY_NAME: z.string().min(1).default('proxy'),
  // Worker processes (node:cluster) sharing one port, each a proxy of its own (id, lease, counts); `auto`: one per CPU.
  WORKERS: z
    .string()
    .default('1')
    .refine((v) => v === 'auto' || /^[1-9][0-9]{0,2}$/.test(v), { message: "a whole number from 1 to 999, or 'auto' (one per CPU)" })
    .transform((v) => (v === 'auto' ? availableParallelism() : Number(v))),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // Stickiness: a response id (and, with SESSION_AFFINITY, an x-session-id) stays bound to its instance this long.
  AFFINITY_TTL_S: z.coerce.number().min(0).max(30 * 86_400).default(3600),
  SESSION_AFFINITY: z.enum(['true', 'false'], { message: 'must be true or false' }).default('false').transform((v) => v === 'true'),
  LOG_TIME: logTimeSchema,
  /** Streamed chat/completions requests that did not ask for usage are sent asking (stream_options.include_usage), and the usage chunk is stripped from their answer. */
  USAGE_FROM_STREAMS: z.enum(['true', 'false'], { message: 'must be true or false' }).default('false').transform((v) => v === 'true'),
  QUEUE_MAX: z.coerce.number().int().min(0).max(1_000_000).default(1024),
  QUEUE_TIMEOUT_S: z.coerce.number().positive().max(3600).default(30),
  // Seconds, not milliseconds: over an hour is almost surely a unit typo.
  DRAIN_TIMEOUT_S: z.coerce.number().positive().max(3600, 'must be at most 3600 seconds (a value in milliseconds?)').default(30),
  DRAIN_SETTLE_S: z.coerce.number().min(0).max(3600).default(5),
  TERMINATION_GRACE_S: z.coerce.number().positive().max(86_400).optional(),
  // Client API keys (the config file's keys: list and POST /v1/keys): every forwarded request needs one; off costs nothing per request.
  API_KEYS: z.enum(['off', 'required'], { message: 'must be off or required' }).default('off'),
  // Edge hygiene (issue 15): client credentials stay at the proxy unless asked; browsers only from listed origins.
  FORWARD_CLIENT_AUTH: z.enum(['true', 'false'], { message: 'must be true or false' }).default('false').transform((v) => v === 'true'),
  CORS_ORIGINS: z
    .string()
    .default('')
    .transform((v) => v.split(',').map((s) => s.trim()).filter(Boolean))
    .refine((list) => list.every((o) => o === '*' || /^https?:\/\/[A-Za-z0-9.\-[\]:]+$/.test(o)), { message: "a comma-separated list of origins (scheme://host[:port], no path) or '*'" }),
})
  .superRefine((c, ctx) => {
    if (c.DRAIN_SETTLE_S >= c.DRAIN_TIMEOUT_S) ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['DRAIN_SETTLE_S'], message: `must be less than DRAIN_TIMEOUT_S (${c.DRAIN_TIMEOUT_S})` });
  });

export type ProxyConfig = z.infer<typeof schema>;

/** The environment over the config file's `proxy` section. */
export function loadProxyConfig(env: NodeJS.ProcessEnv = process.env, file?: ConfigFile): ProxyConfig {
  return parseSettings(schema, env, file, ['proxy']);
}

/** Non-fatal doubts about a valid config, printed at start. */
export function proxyConfigWarnings(c: ProxyConfig): string[] {
  const out: string[] = [];
  if (c.TERMINATION_GRACE_S !== undefined && c.DRAIN_TIMEOUT_S + c.DRAIN_SETTLE_S >= c.TERMINATION_GRACE_S) {
    out.push(
      `DRAIN_TIMEOUT_S + DRAIN_SETTLE_S (${c.DRAIN_TIMEOUT_S + c.DRAIN_SETTLE_S}) >= TERMINATION_GRACE_S (${c.TERMINATION_GRACE_S}): the orchestrator may kill the proxy before its drain ends`,
    );
  }
  return out;
}
