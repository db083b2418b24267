/** The model servers whose /metrics Switchyard reads. */
export const ENGINE_KINDS = ['vllm', 'sglang', 'llamacpp', 'tgi', 'unknown'] as const;
export type EngineKind = (typeof ENGINE_KINDS)[number];

/**
 * An engine's own load, normalised from its /metrics page by the control plane's probe.
 * 0 means measured zero; null means the engine does not report it (never an invented 0).
 * Secondary to the proxies' in-flight counts: `waiting` breaks ties in least_load and
 * `kv_cache_usage` feeds the saturation guard (KV_CACHE_GUARD).
 */
export interface EngineSignals {
  engine: EngineKind;
  /** Requests the engine is decoding now. */
  running: number | null;
  /** Requests queued inside the engine. */
  waiting: number | null;
  /** KV-cache usage as a 0..1 ratio. */
  kv_cache_usage: number | null;
  /** Store clock (ms since epoch) of the scrape these numbers came from; null when never scraped. */
  scraped_at: number | null;
  /** Why the last scrape gave nothing usable (too large, timed out, not Prometheus text); null when it worked. */
  scrape_error: string | null;
}

/** Signals of an instance never scraped: everything unknown. */
export const UNKNOWN_ENGINE: EngineSignals = Object.freeze({ engine: 'unknown', running: null, waiting: null, kv_cache_usage: null, scraped_at: null, scrape_error: null });

/** Why an instance stopped or started being alive; logged once per change. */
export type LivenessReason = 'ttl_lapsed' | 'probes_failed' | 'probe_recovered' | 'heartbeat_resumed' | 'registered';
