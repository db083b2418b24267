import {
  DebugStatusResponse,
  EngineSignals,
  EngineView,
  emptyInstanceStats,
  InstanceLoadsResponse,
  InstanceLoadView,
  InstanceState,
  InstanceStats,
  METRIC_SOURCE,
  NULL_SEMANTICS,
  ProxyState,
  ProxyView,
  TTFT_BUCKETS_MS,
} from '@switchyard/contracts';
import type { Fleet } from '../common/fleet';

const iso = (ms: number) => new Date(ms).toISOString();

export function toProxyView(p: ProxyState): ProxyView {
  return {
    proxy_id: p.proxy_id,
    alive: p.alive,
    draining: p.draining,
    degraded: p.degraded,
    inflight_http: p.inflight_http,
    queued: { ...p.queued },
    last_seen_at: iso(p.last_seen_at),
    lease_expires_at: iso(p.lease_expires_at),
  };
}

/**
 * A proxy's reported queue depth for one model. Own keys only, so a model named `constructor` or
 * `toString` is a model like any other; and a number only, whatever a proxy wrote in its lease.
 */
function queuedFor(p: ProxyState, model: string): number {
  const n: unknown = Object.hasOwn(p.queued, model) ? p.queued[model] : 0;
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : 0;
}

/** Per alive proxy, its waiting requests for any of the instance's models; proxies with none are left out. */
export function queuedByProxy(models: readonly string[], proxies: readonly ProxyState[]): Record<string, number> {
  // Null prototype: a proxy id is a key like any other.
  const out: Record<string, number> = Object.create(null);
  for (const p of proxies) {
    if (!p.alive) continue;
    const n = models.reduce((sum, m) => sum + queuedFor(p, m), 0);
    if (n > 0) out[p.proxy_id] = n;
  }
  return out;
}

export function toEngineView(e: EngineSignals): EngineView {
  return { ...e, scraped_at: e.scraped_at === null ? null : iso(e.scraped_at) };
}

export function toInstanceLoadView(s: InstanceState, proxies: readonly ProxyState[], stats: Readonly<Record<string, InstanceStats>> = {}): InstanceLoadView {
  return {
    instance_id: s.instance_id,
    url: s.url,
    models: s.models,
    alive: s.is_alive,
    is_alive: s.is_alive,
    weight: s.weight,
    max_inflight: s.max_inflight,
    inflight: s.load.inflight,
    inflight_by_proxy: { ...s.inflight_by_proxy },
    // Straight from the store, which keeps null until the instance reports: never a default zero.
    qps_1m: s.load.qps_1m,
    gpu_util: s.load.gpu_util,
    last_seen_at: iso(s.last_seen_at),
    queued_by_proxy: queuedByProxy(s.models, proxies),
    engine: toEngineView(s.engine),
    // Counters start at zero: no alive proxy has ended a request on it (yet, or since they left).
    stats: Object.hasOwn(stats, s.instance_id) ? stats[s.instance_id] : emptyInstanceStats(),
  };
}

/** `GET /debug/instance_loads`: without includeExpired, only alive instances and proxies. */
export function toInstanceLoads(fleet: Fleet, includeExpired: boolean, now: number): InstanceLoadsResponse {
  return {
    generated_at: iso(now),
    metric_source: METRIC_SOURCE,
    null_semantics: NULL_SEMANTICS,
    ttft_buckets_ms: TTFT_BUCKETS_MS,
    instances: fleet.instances.filter((s) => includeExpired || s.is_alive).map((s) => toInstanceLoadView(s, fleet.proxies, fleet.stats)),
    proxies: fleet.proxies.filter((p) => includeExpired || p.alive).map(toProxyView),
  };
}

/** Waiting requests across alive proxies; an expired proxy's last report is stale. */
export function queuedTotal(proxies: readonly ProxyState[]): number {
  return proxies.filter((p) => p.alive).reduce((sum, p) => sum + Object.keys(p.queued).reduce((a, m) => a + queuedFor(p, m), 0), 0);
}

/**
 * `GET /debug/status`. inflight_total counts every registered instance: an expired one
 * can still be streaming answers that proxies hold slots for. draining is a subset of alive.
 */
export function toDebugStatus(fleet: Fleet, now: number): DebugStatusResponse {
  const alive = fleet.instances.filter((s) => s.is_alive).length;
  const aliveProxies = fleet.proxies.filter((p) => p.alive);
  return {
    status: 'ok',
    generated_at: iso(now),
    instances: { alive, expired: fleet.instances.length - alive },
    proxies: { alive: aliveProxies.length, expired: fleet.proxies.length - aliveProxies.length, draining: aliveProxies.filter((p) => p.draining).length },
    inflight_total: fleet.instances.reduce((sum, s) => sum + s.load.inflight, 0),
    queued_total: queuedTotal(fleet.proxies),
  };
}
