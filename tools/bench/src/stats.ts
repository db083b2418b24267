/** Pure helpers of the harness: seeded randomness, arrivals, lengths, percentiles, spreads. */

/** mulberry32: a small seeded PRNG, so every strategy sees the same arrivals and lengths. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Send times (ms from start) of a Poisson process of `ratePerS` over `durationMs`: exponential gaps. */
export function poissonArrivals(ratePerS: number, durationMs: number, rand: () => number): number[] {
  const out: number[] = [];
  const meanGapMs = 1000 / ratePerS;
  for (let t = -Math.log(1 - rand()) * meanGapMs; t < durationMs; t += -Math.log(1 - rand()) * meanGapMs) out.push(t);
  return out;
}

export interface LengthMix {
  /** Short outputs: uniform integer in [shortMin, shortMax]. */
  shortMin: number;
  shortMax: number;
  /** Share of requests whose output is `longFactor` times a short draw. */
  longShare: number;
  longFactor: number;
}

/** Heavy-tailed output lengths: most short, a few `longFactor` times longer. */
export function outputLength(mix: LengthMix, rand: () => number): number {
  const short = mix.shortMin + Math.floor(rand() * (mix.shortMax - mix.shortMin + 1));
  return rand() < mix.longShare ? short * mix.longFactor : short;
}

/** Mean output length of the mix, exactly. */
export function meanOutputLength(mix: LengthMix): number {
  const shortMean = (mix.shortMin + mix.shortMax) / 2;
  return shortMean * (1 - mix.longShare) + shortMean * mix.longFactor * mix.longShare;
}

/** Nearest-rank percentile (p in 0..100) of unsorted values; NaN for none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export function mean(values: readonly number[]): number {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN;
}

/** max − min of one sample of per-instance in-flight counts. */
export function spread(counts: readonly number[]): number {
  return counts.length ? Math.max(...counts) - Math.min(...counts) : 0;
}

export interface SpreadSummary {
  mean: number;
  p99: number;
  max: number;
  samples: number;
}

export function summarizeSpreads(samples: readonly (readonly number[])[]): SpreadSummary {
  const s = samples.map(spread);
  return { mean: mean(s), p99: percentile(s, 99), max: s.length ? Math.max(...s) : NaN, samples: s.length };
}

/** utime + stime of a /proc/<pid>/stat line, in clock ticks (the command name may hold spaces and parentheses). */
export function cpuTicksFromStat(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): utime and stime are fields 14 and 15.
  return Number(fields[11]) + Number(fields[12]);
}

/** VmRSS of a /proc/<pid>/status text, in KiB. */
export function rssKiBFromStatus(status: string): number {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  if (!m) throw new Error('no VmRSS line');
  return Number(m[1]);
}

/** Busy and total jiffies of the aggregate `cpu` line of /proc/stat (idle and iowait count as not busy). */
export function cpuJiffiesFromProcStat(text: string): { busy: number; total: number } {
  const line = text.split('\n').find((l) => l.startsWith('cpu '));
  if (!line) throw new Error('no cpu line');
  const v = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = v.reduce((a, b) => a + b, 0);
  return { busy: total - v[3] - v[4], total };
}

/** Share of the machine's CPU time that was busy between two /proc/stat readings. */
export function busyShare(before: string, after: string): number {
  const a = cpuJiffiesFromProcStat(before);
  const b = cpuJiffiesFromProcStat(after);
  return b.total > a.total ? (b.busy - a.busy) / (b.total - a.total) : NaN;
}
