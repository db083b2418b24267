import { TTFT_BUCKETS_MS } from '@switchyard/contracts';
import { CLIENT_GONE } from './exchange';
import { InstanceStatsRecorder, ttftBucket } from './instance-stats';

const ended = (instanceId: string | null, status: number, ttftMs: number | null = null) => ({ instanceId, status, startedAt: 1000, firstTokenAt: ttftMs === null ? null : 1000 + ttftMs });

describe('InstanceStatsRecorder', () => {
  it('writes nothing before the first request that held an instance', () => {
    const stats = new InstanceStatsRecorder();
    expect(stats.snapshot()).toBeUndefined();
    stats.record(ended(null, 503));
    expect(stats.snapshot()).toBeUndefined();
  });

  it('counts requests, 5xx as errors, 499 as client gone, and the time to first token in its bucket', () => {
    const stats = new InstanceStatsRecorder();
    stats.record(ended('a', 200, 80));
    stats.record(ended('a', 200, 100));
    stats.record(ended('a', 502));
    stats.record(ended('a', 504));
    stats.record(ended('a', 429));
    stats.record(ended('a', CLIENT_GONE, 40_000));
    stats.record(ended('b', 200));
    const ttft = new Array<number>(TTFT_BUCKETS_MS.length + 1).fill(0);
    ttft[2] = 2; // both at most 100 ms: a bound is inclusive
    ttft[TTFT_BUCKETS_MS.length] = 1; // above the last bound
    expect(stats.snapshot()).toEqual({
      a: { requests: 6, errors: 2, client_gone: 1, ttft_ms: ttft },
      b: { requests: 1, errors: 0, client_gone: 0, ttft_ms: new Array<number>(TTFT_BUCKETS_MS.length + 1).fill(0) },
    });
  });

  it('puts a time on a bound into that bound’s bucket and just above it into the next', () => {
    expect(ttftBucket(0)).toBe(0);
    expect(ttftBucket(25)).toBe(0);
    expect(ttftBucket(25.1)).toBe(1);
    expect(ttftBucket(30_000)).toBe(TTFT_BUCKETS_MS.length - 1);
    expect(ttftBucket(30_001)).toBe(TTFT_BUCKETS_MS.length);
  });
});
