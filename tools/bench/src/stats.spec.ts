import { busyShare, cpuTicksFromStat, mean, meanOutputLength, outputLength, percentile, poissonArrivals, rssKiBFromStatus, seededRandom, spread, summarizeSpreads } from './stats';

describe('percentile (nearest rank)', () => {
  it('picks the nearest-rank value of unsorted input', () => {
    const v = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6];
    expect(percentile(v, 50)).toBe(5);
    expect(percentile(v, 90)).toBe(9);
    expect(percentile(v, 99)).toBe(10);
    expect(percentile(v, 0)).toBe(1);
  });

  it('is NaN for no values and does not reorder its input', () => {
    expect(percentile([], 50)).toBeNaN();
    const v = [3, 1, 2];
    percentile(v, 50);
    expect(v).toEqual([3, 1, 2]);
  });
});

describe('seeded arrivals and lengths', () => {
  it('gives the same arrivals for the same seed and different ones for another', () => {
    const a = poissonArrivals(100, 1000, seededRandom(1));
    expect(poissonArrivals(100, 1000, seededRandom(1))).toEqual(a);
    expect(poissonArrivals(100, 1000, seededRandom(2))).not.toEqual(a);
  });

  it('sends at the asked rate, increasing, within the duration, with exponential gaps', () => {
    const a = poissonArrivals(200, 60_000, seededRandom(7));
    expect(a.length / 60).toBeGreaterThan(190);
    expect(a.length / 60).toBeLessThan(210);
    expect(a.every((t, i) => t >= 0 && t < 60_000 && (i === 0 || t >= a[i - 1]))).toBe(true);
    const gaps = a.slice(1).map((t, i) => t - a[i]);
    // An exponential distribution's standard deviation equals its mean (a fixed rate would give ~0).
    const m = mean(gaps);
    const sd = Math.sqrt(mean(gaps.map((g) => (g - m) ** 2)));
    expect(sd / m).toBeGreaterThan(0.9);
    expect(sd / m).toBeLessThan(1.1);
  });

  it('draws heavy-tailed lengths: mostly short, the asked share longFactor times longer', () => {
    const mix = { shortMin: 4, shortMax: 12, longShare: 0.1, longFactor: 10 };
    const rand = seededRandom(3);
    const n = Array.from({ length: 20_000 }, () => outputLength(mix, rand));
    const long = n.filter((x) => x > 12);
    expect(n.every((x) => (x >= 4 && x <= 12) || (x >= 40 && x <= 120 && x % 10 === 0))).toBe(true);
    expect(long.length / n.length).toBeGreaterThan(0.09);
    expect(long.length / n.length).toBeLessThan(0.11);
    expect(meanOutputLength(mix)).toBeCloseTo(15.2, 10);
    expect(mean(n)).toBeGreaterThan(14.5);
    expect(mean(n)).toBeLessThan(15.9);
  });
});

describe('spreads', () => {
  it('is max − min of each sample, summarized', () => {
    expect(spread([3, 0, 5, 2])).toBe(5);
    expect(spread([])).toBe(0);
    const s = summarizeSpreads([
      [1, 1, 1],
      [0, 2, 1],
      [4, 0, 0],
    ]);
    expect(s).toEqual({ mean: 2, p99: 4, max: 4, samples: 3 });
  });
});

describe('/proc readings', () => {
  it('sums utime and stime even when the command name holds spaces and parentheses', () => {
    const stat = '4242 (node (x) y) S 1 4242 4242 0 -1 4194560 1234 0 0 0 1500 250 0 0 20 0 11 0 100 1000000 5000 18446744073709551615';
    expect(cpuTicksFromStat(stat)).toBe(1750);
  });

  it('reads VmRSS in KiB', () => {
    expect(rssKiBFromStatus('Name:\tnode\nVmPeak:\t  900 kB\nVmRSS:\t  123456 kB\nRssAnon:\t 1 kB\n')).toBe(123456);
    expect(() => rssKiBFromStatus('Name:\tnode\n')).toThrow('VmRSS');
  });

  it('computes the busy share of the machine between two /proc/stat readings', () => {
    const before = 'cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 50 0 50 350 50 0 0 0 0 0\n';
    const after = 'cpu  250 0 150 800 100 0 0 0 0 0\ncpu0 1 0 0 0 0 0 0 0 0 0\n';
    expect(busyShare(before, after)).toBeCloseTo(200 / 300, 10);
  });
});
