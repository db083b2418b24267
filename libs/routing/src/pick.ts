import type { Strategy } from './strategy';

/** One instance as a strategy sees it. */
export interface Candidate {
  instance_id: string;
  inflight: number;
  /** null when the instance has not reported it. */
  qps_1m: number | null;
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
function score(c: Candidate): number {
  return c.inflight / c.weight;
}

/** Unknown qps_1m orders as 0, so a fresh instance that has not yet reported is not starved. */
function qpsScore(c: Candidate): number {
  return (c.qps_1m ?? 0) / c.weight;
}

/**
 * Picks among candidates. The same rules run inside the Redis selection script;
 * the shared store contract suite checks that both agree.
 * Candidates are ordered by instance_id so round-robin is stable across proxies.
 */
export function pick(strategy: Strategy, candidates: readonly Candidate[], input: PickInput): PickOutcome {
  const alive = candidates.filter((c) => c.is_alive);
  if (alive.length === 0) return { kind: 'none_alive' };
  const open = alive.filter(hasCapacity).sort((a, b) => (a.instance_id < b.instance_id ? -1 : a.instance_id > b.instance_id ? 1 : 0));
  if (open.length === 0) return { kind: 'all_full' };
  const n = open.length;
  switch (strategy) {
    case 'round_robin':
      return { kind: 'picked', instance_id: open[input.ticket % n].instance_id };
    case 'random':
      return { kind: 'picked', instance_id: open[Math.floor(input.rand1 * n)].instance_id };
    case 'power_of_two': {
      const a = Math.floor(input.rand1 * n);
      let b = Math.floor(input.rand2 * (n - 1));
      if (b >= a) b += 1;
      if (n === 1) return { kind: 'picked', instance_id: open[0].instance_id };
      const ca = open[a];
      const cb = open[b];
      return { kind: 'picked', instance_id: score(cb) < score(ca) ? cb.instance_id : ca.instance_id };
    }
    case 'least_load': {
      let best = Infinity;
      let bestQps = Infinity;
      let ties: Candidate[] = [];
      for (const c of open) {
        const s = score(c);
        const q = qpsScore(c);
        if (s < best || (s === best && q < bestQps)) {
          best = s;
          bestQps = q;
          ties = [c];
        } else if (s === best && q === bestQps) {
          ties.push(c);
        }
      }
      return { kind: 'picked', instance_id: ties[input.ticket % ties.length].instance_id };
    }
  }
}
