/** Where each number of the debug view comes from. */
export const METRIC_SOURCE = {
  inflight: 'proxy_lifecycle_counter',
  qps_1m: 'heartbeat',
  gpu_util: 'heartbeat',
  engine: 'probe_metrics_scrape',
  stats: 'proxy_exchange_counters',
} as const;

export const NULL_SEMANTICS = '0 means measured zero; null means unknown';

import type { EngineKind } from './engine';
import type { InstanceStats } from './instance-stats';

/** An instance's engine signals as the debug view shows them (scraped_at as an ISO time). */
export interface EngineView {
  engine: EngineKind;
  running: number | null;
  waiting: number | null;
  kv_cache_usage: number | null;
  scraped_at: string | null;
  scrape_error: string | null;
}

/** One instance in `GET /debug/instance_loads`. */
export interface InstanceLoadView {
  instance_id: string;
  url: string;
  models: string[];
  /** Alive: last heartbeat or successful probe within ttl_s. */
  alive: boolean;
  /** @deprecated the same as `alive`; kept one release. */
  is_alive: boolean;
  weight: number;
  max_inflight: number | null;
  /** The shared sum of every live proxy's contribution. */
  inflight: number;
  inflight_by_proxy: Record<string, number>;
  qps_1m: number | null;
  gpu_util: number | null;
  last_seen_at: string;
  /** Requests for this instance's models waiting in each proxy's admission queue. */
  queued_by_proxy: Record<string, number>;
  /** What the engine itself reports on /metrics (secondary to inflight: tie-breaker and saturation guard). */
  engine: EngineView;
  /** Cumulative request counters summed over alive proxies (see InstanceStats): rates come from successive reads. */
  stats: InstanceStats;
}

/** One proxy, from its lease. */
export interface ProxyView {
  proxy_id: string;
  alive: boolean;
  draining: boolean;
  degraded: boolean;
  inflight_http: number;
  /** Waiting requests per model. */
  queued: Record<string, number>;
  last_seen_at: string;
  lease_expires_at: string;
}

/** `GET /debug/instance_loads[?include_expired=true]` (`include_dead`: deprecated, accepted one release). */
export interface InstanceLoadsResponse {
  generated_at: string;
  metric_source: typeof METRIC_SOURCE;
  null_semantics: typeof NULL_SEMANTICS;
  /** Upper bounds of the buckets of every instance's `stats.ttft_ms` (TTFT_BUCKETS_MS); its last count is above the last bound. */
  ttft_buckets_ms: readonly number[];
  instances: InstanceLoadView[];
  proxies: ProxyView[];
}

/** `GET /debug/status`. */
export interface DebugStatusResponse {
  status: 'ok';
  generated_at: string;
  instances: { alive: number; expired: number };
  proxies: { alive: number; expired: number; draining: number };
  inflight_total: number;
  queued_total: number;
}
