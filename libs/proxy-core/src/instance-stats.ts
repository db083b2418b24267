import { emptyInstanceStats, InstanceStats, TTFT_BUCKETS_MS } from '@switchyard/contracts';
import { CLIENT_GONE } from './exchange';

/** What an ended exchange tells the counters. */
export interface EndedExchange {
  readonly instanceId: string | null;
  readonly status: number;
  readonly startedAt: number;
  readonly firstTokenAt: number | null;
}

/** The TTFT bucket of a time in ms: the first bound it does not exceed, else the overflow. */
export function ttftBucket(ms: number): number {
  let i = 0;
  while (i < TTFT_BUCKETS_MS.length && ms > TTFT_BUCKETS_MS[i]) i++;
  return i;
}

/**
 * This proxy's cumulative request counters per instance, in memory: a few additions at each
 * exchange's end, written to the store with the lease renewal (no round trip per request), so
 * the control plane, which never sees requests, can show them summed over the alive proxies.
 */
export class InstanceStatsRecorder {
  private readonly byInstance = new Map<string, InstanceStats>();

  /** Counts an exchange that held an instance; one that never got one counts nowhere. */
  record(ex: EndedExchange): void {
    if (ex.instanceId === null) return;
    let s = this.byInstance.get(ex.instanceId);
    if (!s) this.byInstance.set(ex.instanceId, (s = emptyInstanceStats()));
    s.requests += 1;
    if (ex.status === CLIENT_GONE) s.client_gone += 1;
    else if (ex.status >= 500) s.errors += 1;
    if (ex.firstTokenAt !== null) s.ttft_ms[ttftBucket(ex.firstTokenAt - ex.startedAt)] += 1;
  }

  ids(): IterableIterator<string> {
    return this.byInstance.keys();
  }

  /** An instance gone from the registry stops being written with the lease. */
  forget(instanceId: string): void {
    this.byInstance.delete(instanceId);
  }

  /** Every instance counted so far, as the lease renewal writes them; undefined before the first request (the renewal then leaves the store's copy alone). */
  snapshot(): Record<string, InstanceStats> | undefined {
    if (this.byInstance.size === 0) return undefined;
    const out: Record<string, InstanceStats> = {};
    for (const [id, s] of this.byInstance) out[id] = s;
    return out;
  }
}
