/**
 * Upper bounds (ms) of the time-to-first-token buckets every proxy counts into, so the buckets of
 * many proxies add up and a percentile can be read from their sum (or from the increase between
 * two reads). The last count of `ttft_ms` is the overflow: above the last bound.
 */
export const TTFT_BUCKETS_MS = [25, 50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000, 30000] as const;

/**
 * Cumulative request counters of one instance, as counted by proxies at each exchange's end (the
 * control plane never sees requests). Counters only: a reader takes rates from successive reads;
 * a proxy's share disappears with its lease, so a sum can go down (read that as a reset).
 */
export interface InstanceStats {
  /** Exchanges that ended holding this instance (its last attempt's instance). */
  requests: number;
  /** Of those, answered with a 5xx (upstream failures included). */
  errors: number;
  /** Of those, ended by the client leaving first (499). */
  client_gone: number;
  /** Time to first token: counts per TTFT_BUCKETS_MS bucket (not cumulative), then the overflow. Exchanges without a first token count in none. */
  ttft_ms: number[];
}

export function emptyInstanceStats(): InstanceStats {
  return { requests: 0, errors: 0, client_gone: 0, ttft_ms: new Array<number>(TTFT_BUCKETS_MS.length + 1).fill(0) };
}

/** Adds `from` into `into`; a malformed or short `from` (another version's proxy) adds what it has. */
export function addInstanceStats(into: InstanceStats, from: InstanceStats): InstanceStats {
  if (from === null || typeof from !== 'object') return into;
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);
  into.requests += n(from.requests);
  into.errors += n(from.errors);
  into.client_gone += n(from.client_gone);
  const buckets = Array.isArray(from.ttft_ms) ? from.ttft_ms : [];
  for (let i = 0; i < into.ttft_ms.length; i++) into.ttft_ms[i] += n(buckets[i]);
  return into;
}

/** Sums per-instance stats (one record per proxy) into one record per instance. */
export function sumInstanceStats(parts: Iterable<Readonly<Record<string, InstanceStats>>>): Record<string, InstanceStats> {
  // Null prototype: an instance id is a key like any other.
  const out: Record<string, InstanceStats> = Object.create(null);
  for (const part of parts) {
    for (const [id, s] of Object.entries(part)) addInstanceStats((out[id] ??= emptyInstanceStats()), s);
  }
  return out;
}
