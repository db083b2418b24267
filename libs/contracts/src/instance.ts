import { z } from 'zod';
import type { EngineSignals } from './engine';

/** Registration limit on ids; every route takes an id this long in its path (the control plane's maxParamLength). */
export const INSTANCE_ID_MAX = 200;
/** Brackets for ids derived from IPv6 addresses (`hp_[::1]:8000`). */
export const INSTANCE_ID_PATTERN = /^[A-Za-z0-9_.:@\-[\]]{1,200}$/;
/**
 * Ids routes look up: the same characters, and long enough for an id derived from a 253-character
 * host before registration bounded them, so such an instance can still be read and removed.
 */
export const INSTANCE_ID_LOOKUP_PATTERN = /^[A-Za-z0-9_.:@\-[\]]{1,264}$/;
const ID_CHARS = 'A-Z a-z 0-9 _ . : @ - [ ]';

export const instanceIdSchema = z.string().regex(INSTANCE_ID_PATTERN, `must be 1-${INSTANCE_ID_MAX} characters of ${ID_CHARS}`);
export const instanceIdLookupSchema = z.string().regex(INSTANCE_ID_LOOKUP_PATTERN, `must be 1-264 characters of ${ID_CHARS}`);

/** Model names as engines report them: `org/model`, `name:tag`, `file.gguf` paths. */
const MODEL_NAME = /^[A-Za-z0-9_.:@/+=~-]{1,256}$/;
const TAG = /^[A-Za-z0-9_.:@/+=~-]{1,128}$/;
const NAME_CHARS = 'A-Z a-z 0-9 _ . : @ / + = ~ -';
export const modelNameSchema = z.string().regex(MODEL_NAME, `must be 1-256 characters of ${NAME_CHARS}`);
const tagSchema = z.string().regex(TAG, `must be 1-128 characters of ${NAME_CHARS}`);

export const META_MAX_DEPTH = 8;
export const META_MAX_BYTES = 16 * 1024;

/** Nesting below `value` (a scalar is 0); stops counting past `limit`, so a hostile depth costs nothing. */
function depthOf(value: unknown, limit: number): number {
  if (value === null || typeof value !== 'object') return 0;
  if (limit <= 0) return 1;
  let deepest = 0;
  for (const v of Object.values(value)) {
    deepest = Math.max(deepest, depthOf(v, limit - 1));
    if (deepest >= limit) break;
  }
  return 1 + deepest;
}

/** Free-form labels an operator attaches; stored and returned as is, so bounded like the rest. */
const metaSchema = z
  .record(z.string(), z.unknown())
  .superRefine((meta, ctx) => {
    if (depthOf(meta, META_MAX_DEPTH) > META_MAX_DEPTH) ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must nest at most ${META_MAX_DEPTH} levels` });
    else if (Buffer.byteLength(JSON.stringify(meta)) > META_MAX_BYTES) ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be at most ${META_MAX_BYTES} bytes as JSON` });
  });

/** `hp_{host}:{port}`: the id of an instance registered without one. */
export function derivedInstanceId(host: string, port: number): string {
  return `hp_${host}:${port}`;
}

/** The OpenAI routes an instance serves unless it says otherwise. */
export const DEFAULT_ENDPOINTS = ['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/responses'] as const;

/**
 * Where an instance is reached. The proxy appends the API path to it, so a query or a fragment
 * would take over every upstream path, and credentials would be sent to whoever the URL names.
 */
export const instanceUrlSchema = z
  .string()
  .max(2048)
  .superRefine((value, ctx) => {
    const fail = (message: string) => ctx.addIssue({ code: z.ZodIssueCode.custom, message });
    if (!/^[\x21-\x7E]+$/.test(value)) return fail('must be printable ASCII without spaces');
    if (!URL.canParse(value)) return fail('must be an absolute URL');
    const u = new URL(value);
    if (!['http:', 'https:'].includes(u.protocol)) return fail('scheme must be http or https');
    if (u.username || u.password || value.slice(u.protocol.length + 2).split(/[/?#]/)[0].includes('@')) return fail('must not carry credentials (user:password@)');
    if (value.includes('?') || value.includes('#')) return fail('must not have a query or a fragment: the proxy appends the API path to it');
  });

/**
 * The instance's own upstream key (vLLM `--api-key`), sent by proxies and probes as `Authorization: Bearer`.
 * Write-only: stored with the record, never in a view, an event or a log line. Header-safe characters only.
 */
export const instanceApiKeySchema = z.string().min(1, 'must not be empty').max(1024).regex(/^[\x21-\x7E]+$/, 'must be printable ASCII without spaces');

const ENDPOINT_PATTERN = /^(\/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)+$/;

/** The routes an instance serves: plain paths, each once. */
const endpointsSchema = z
  .array(z.string().max(128).regex(ENDPOINT_PATTERN, 'must be a path like /v1/chat/completions (segments of A-Z a-z 0-9 . _ ~ -, no query)'))
  .min(1, 'must list at least one route')
  .max(64)
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((e, i) => {
      if (seen.has(e)) ctx.addIssue({ code: z.ZodIssueCode.custom, path: [i], message: `${e} listed twice` });
      seen.add(e);
    });
  });

export const instanceRegistrationSchema = z
  .object({
    instance_id: instanceIdSchema.optional(),
    url: instanceUrlSchema.optional(),
    host: z.string().min(1).max(253).regex(/^[A-Za-z0-9.\-\[\]:]+$/, 'must be a hostname or IP address').optional(),
    port: z.number().int().min(1).max(65535).optional(),
    models: z.array(modelNameSchema).min(1, 'must list at least one model').max(256),
    endpoints: endpointsSchema.optional(),
    tags: z.array(tagSchema).max(64).default([]),
    weight: z.number().positive().max(1000).default(1),
    max_inflight: z.number().int().min(1).max(1_000_000).optional(),
    meta: metaSchema.default({}),
    /** Probe the URL once before answering: 422 when it cannot be reached or does not list the models. */
    probe_now: z.boolean().optional(),
    pool: z.string().regex(/^[A-Za-z0-9_.\-]{1,64}$/, 'must be 1-64 characters of A-Z a-z 0-9 _ . -').optional(),
    api_key: instanceApiKeySchema.optional(),
  })
  .strict()
  .superRefine((value, ctx) => {
    if (value.url !== undefined && (value.host !== undefined || value.port !== undefined)) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['url'], message: 'give either url or host+port, not both' });
    } else if (value.url === undefined) {
      if (value.host === undefined) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['url'], message: 'required (or host and port)' });
      } else if (value.port === undefined) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['port'], message: 'required with host' });
      }
    }
    // A derived id must be one every route accepts, or the instance could never be read or removed.
    if (value.instance_id === undefined && (value.url !== undefined) !== (value.host !== undefined) && (value.url === undefined ? value.port !== undefined : URL.canParse(value.url))) {
      const { host, port } = hostAndPort(value);
      if (!INSTANCE_ID_PATTERN.test(derivedInstanceId(host, port))) {
        const field = value.url === undefined ? 'host' : 'url';
        ctx.addIssue({ code: z.ZodIssueCode.custom, path: [field], message: `the id derived from it (hp_{host}:{port}) would exceed ${INSTANCE_ID_MAX} characters or use other characters than ${ID_CHARS}; give instance_id` });
      }
    }
  });

export type InstanceRegistration = z.input<typeof instanceRegistrationSchema>;
export type ParsedInstanceRegistration = z.output<typeof instanceRegistrationSchema>;

/** What the registry keeps for an instance: everything but its live load. */
export interface InstanceRecord {
  instance_id: string;
  url: string;
  models: string[];
  endpoints: string[];
  tags: string[];
  weight: number;
  max_inflight: number | null;
  meta: Record<string, unknown>;
  ttl_s: number;
  registered_at: number;
  /** Routing pool (one hash slot of a Redis Cluster); absent means 'default'. A model lives in one pool. */
  pool?: string;
  /** Write-only upstream key (see instanceApiKeySchema); publicRecord() drops it. */
  api_key?: string;
  /** What the engine's /v1/models says of each model, read by the control plane; absent until read. */
  model_info?: Record<string, ModelInfo>;
  /** When model_info was read (ms since epoch). */
  model_info_at?: number;
}

/** Per-model facts an engine reports at /v1/models (vLLM: max_model_len, owned_by); null when it does not say. */
export interface ModelInfo {
  max_model_len: number | null;
  owned_by: string | null;
}

/** A record as it may leave the store's readers (registry events, any view): without the instance's api_key. */
export function publicRecord<T extends InstanceRecord>(record: T): Omit<T, 'api_key'> {
  if (record.api_key === undefined) return record;
  const { api_key: _k, ...rest } = record;
  return rest;
}

/** Load as measured: 0 means measured zero; null means unknown. */
export interface InstanceLoad {
  inflight: number;
  qps_1m: number | null;
  gpu_util: number | null;
}

/** Registry record plus liveness and load, as the store reports it (times in ms since epoch). */
export interface InstanceState extends InstanceRecord {
  last_seen_at: number;
  is_alive: boolean;
  load: InstanceLoad;
  inflight_by_proxy: Record<string, number>;
  /** The engine's own load from the last scrape; UNKNOWN_ENGINE until one is reported. */
  engine: EngineSignals;
  /** kv_cache_usage at or over KV_CACHE_GUARD at the last report (the control plane decides); false until reported. */
  saturated: boolean;
}

/** The registry record inside a state: every field the registration wrote, without liveness and load. */
export function recordOf(state: InstanceState): InstanceRecord {
  const { last_seen_at: _s, is_alive: _a, load: _l, inflight_by_proxy: _b, engine: _e, saturated: _x, ...record } = state;
  return record;
}

/** The API's view of an instance (times as ISO strings). */
export interface InstanceView {
  instance_id: string;
  url: string;
  models: string[];
  endpoints: string[];
  tags: string[];
  weight: number;
  max_inflight: number | null;
  meta: Record<string, unknown>;
  /** Alive: last heartbeat or successful probe within ttl_s (the one word for liveness, as proxies say it). */
  alive: boolean;
  /** @deprecated the same as `alive`; kept one release. */
  is_alive: boolean;
  registered_at: string;
  last_seen_at: string;
  ttl_s: number;
  load: InstanceLoad;
}

export interface RegistrationResponse {
  instance_id: string;
  heartbeat_interval_s: number;
  ttl_s: number;
}

/** Heartbeat cadence for a TTL: three beats per TTL, between 1 and 10 seconds. */
export function heartbeatIntervalS(ttlS: number): number {
  return Math.min(10, Math.max(1, Math.floor(ttlS / 3)));
}

function hostAndPort(reg: { url?: string; host?: string; port?: number }): { host: string; port: number } {
  if (reg.url === undefined) return { host: reg.host as string, port: reg.port as number };
  const parsed = new URL(reg.url);
  return { host: parsed.hostname, port: parsed.port ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80 };
}

/** Turns a validated registration into a registry record (defaults applied, id derived). */
export function toInstanceRecord(reg: ParsedInstanceRegistration, ttlS: number, now: number): InstanceRecord {
  const { host, port } = hostAndPort(reg);
  const url = reg.url !== undefined ? reg.url.replace(/\/+$/, '') : `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`;
  return {
    instance_id: reg.instance_id ?? derivedInstanceId(host, port),
    url,
    models: [...new Set(reg.models)],
    endpoints: reg.endpoints ?? [...DEFAULT_ENDPOINTS],
    tags: reg.tags,
    weight: reg.weight,
    max_inflight: reg.max_inflight ?? null,
    meta: reg.meta,
    ttl_s: ttlS,
    registered_at: now,
    ...(reg.pool !== undefined ? { pool: reg.pool } : {}),
    ...(reg.api_key !== undefined ? { api_key: reg.api_key } : {}),
  };
}

export function toInstanceView(state: InstanceState): InstanceView {
  return {
    instance_id: state.instance_id,
    url: state.url,
    models: state.models,
    endpoints: state.endpoints,
    tags: state.tags,
    weight: state.weight,
    max_inflight: state.max_inflight,
    meta: state.meta,
    alive: state.is_alive,
    is_alive: state.is_alive,
    registered_at: new Date(state.registered_at).toISOString(),
    last_seen_at: new Date(state.last_seen_at).toISOString(),
    ttl_s: state.ttl_s,
    load: state.load,
  };
}
