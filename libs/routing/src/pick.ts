import type { Strategy } from './strategy';

/** One instance as a strategy sees it. */
export interface Candidate {
  instance_id: string;
  inflight: number;
  /** null when the instance has not reported it. */
  qps_1m: number | null;
  /** Requests queued inside the engine (its /metrics); null when unknown. */
  waiting: number | null;
  /** The engine's KV cache is at or over KV_CACHE_GUARD (decided by the control plane). */
  saturated: boolean;
  weight: number;
  max_inflight: number | null;
  is_alive: boolean;
}

/** Per-call inputs that make a pick reproducible: a round-robin ticket and two uniform randoms in [0, 1). */
export interface PickInput {
  ticket: number;
  rand1: number;
  rand2: number;
}

export type PickOutcome =
  | { kind: 'picked'; instance_id: string }
  | { kind: 'none_alive' }
  | { kind: 'all_full' };

export function hasCapacity(c: Candidate): boolean {
  return c.max_inflight === null || c.inflight < c.max_inflight;
}

/** Weighted load: a weight-2 instance at 2 in flight is as loaded as a weight-1 at 1. */
export function loadScore(c: Pick<Candidate, 'inflight' | 'weight'>): number {
  return c.inflight / c.weight;
}

/** Unknown waiting orders as 0, so an engine without /metrics is not starved. */
export function waitingScore(c: Pick<Candidate, 'waiting'>): number {
  return c.waiting !== null && c.waiting > 0 ? c.waiting : 0;
}

/** Unknown qps_1m orders as 0, so a fresh instance that has not yet reported is not starved. */
export function qpsScore(c: Pick<Candidate, 'qps_1m' | 'weight'>): number {
  return c.qps_1m !== null && c.qps_1m > 0 ? c.qps_1m / c.weight : 0;
}

const byId = (a: Candidate, b: Candidate) => (a.instance_id < b.instance_id ? -1 : a.instance_id > b.instance_id ? 1 : 0);

/**
 * Picks among candidates. The same rules run inside the Redis selection script;
 * the shared store contract suite checks that both agree pick for pick.
 * Candidates are ordered by instance_id so round-robin is stable across proxies.
 * Saturation guard, for every strategy: saturated instances are candidates only
 * when every alive instance with capacity is saturated.
 */
export function pick(strategy: Strategy, candidates: readonly Candidate[], input: PickInput): PickOutcome {
  const alive = candidates.filter((c) => c.is_alive);
  if (alive.length === 0) return { kind: 'none_alive' };
  const withRoom = alive.filter(hasCapacity);
  if (withRoom.length === 0) return { kind: 'all_full' };
  const unsaturated = withRoom.filter((c) => !c.saturated);
  const open = (unsaturated.length > 0 ? unsaturated : withRoom).sort(byId);
  const n = open.length;
  switch (strategy) {
    case 'round_robin':
      return { kind: 'picked', instance_id: open[input.ticket % n].instance_id };
    case 'random':
      return { kind: 'picked', instance_id: open[Math.floor(input.rand1 * n)].instance_id };
    case 'power_of_two': {
      if (n === 1) return { kind: 'picked', instance_id: open[0].instance_id };
      const a = Math.floor(input.rand1 * n);
      let b = Math.floor(input.rand2 * (n - 1));
      if (b >= a) b += 1;
      const ca = open[a];
      const cb = open[b];
      return { kind: 'picked', instance_id: loadScore(cb) < loadScore(ca) ? cb.instance_id : ca.instance_id };
    }
    case 'least_load': {
      // Lowest in-flight per weight, then fewest waiting in the engine, then lowest qps_1m per weight.
      let best: [number, number, number] = [Infinity, Infinity, Infinity];
      let ties: Candidate[] = [];
      for (const c of open) {
        const key: [number, number, number] = [loadScore(c), waitingScore(c), qpsScore(c)];
        const cmp = compareKeys(key, best);
        if (cmp < 0) {
          best = key;
          ties = [c];
        } else if (cmp === 0) {
          ties.push(c);
        }
      }
      return { kind: 'picked', instance_id: ties[input.ticket % ties.length].instance_id };
    }
  }
}

function compareKeys(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}
