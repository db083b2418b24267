import type { BalanceResult, LoadResult, StrategyKey } from './balance';
import type { OverheadResult, ScenarioResult } from './overhead';
import { evaluateTargets, keepMarkedSections, ttftSvg } from './report';

const load = (l: number, ttftP99Ms: number): LoadResult => ({
  load: l,
  ratePerS: 100 * l,
  sent: 10,
  measured: 9,
  errors: 0,
  ttftP50Ms: 40,
  ttftP99Ms,
  ttftP99ByRound: [ttftP99Ms],
  e2eP50Ms: 100,
  e2eP99Ms: 900,
  spread: { mean: 1, p99: 2, max: 3, samples: 10 },
  meanInflight: 30,
  machineBusy: 0.5,
  proxyCpuUsPerReq: 500,
});

function balance(p99At90: Record<StrategyKey, number>): BalanceResult {
  return {
    settings: { instances: 8, proxies: 4, sim: { MAX_BATCH: 8, TTFT_BASE_MS: 30, TOKEN_MS: 10, TOKEN_MS_PER_BATCH: 2 }, lengths: { shortMin: 4, shortMax: 12, longShare: 0.1, longFactor: 10 }, loads: [0.7, 0.9], durationS: 1, warmupS: 0, proxyWarmupS: 0, capacityS: 1, sampleMs: 100, seed: 1, rounds: 1 },
    capacity: { formulaPerS: 170, measuredPerS: 160, usedPerS: 160, meanOutputTokens: 15.2 },
    runs: (Object.keys(p99At90) as StrategyKey[]).map((strategy) => ({ strategy, loads: [load(0.7, 50), load(0.9, p99At90[strategy])] })),
  };
}

const cell = (rps: number, p50Ms: number): ScenarioResult => ({ requests: rps, durationS: 1, rps, p50Ms, p90Ms: p50Ms, p99Ms: p50Ms * 3, meanMs: p50Ms, errors: 0, cpuUsPerReq: 50 });

function overhead(switchyardRps: number, switchyardC1P50: number): OverheadResult {
  const t = (target: 'direct' | 'switchyard' | 'nginx', rps: number, c1: number) => ({ target, json: cell(rps, 1), jsonC1: cell(5000, c1), sse: cell(rps / 2, 5) });
  return {
    settings: { connections: 32, durationS: 1, warmupS: 1, idleStreams: 0, rssTargets: [], withRequestLog: false },
    targets: [t('direct', 20_000, 0.1), t('switchyard', switchyardRps, switchyardC1P50), t('nginx', 10_000, 0.2)],
  };
}

describe('targets', () => {
  it('meets the balance targets at 90% load only within 10% of the global scheduler and 30% below round_robin', () => {
    const met = evaluateTargets(undefined, balance({ round_robin: 300, local_least_load: 200, shared_least_load: 110, global_least_load: 100 }));
    expect(met.map((t) => t.met)).toEqual([true, true]);
    const missed = evaluateTargets(undefined, balance({ round_robin: 150, local_least_load: 200, shared_least_load: 111, global_least_load: 100 }));
    expect(missed.map((t) => t.met)).toEqual([false, false]);
  });

  it('meets the overhead targets with added p50 under 1 ms and at least half of nginx’s throughput', () => {
    expect(evaluateTargets(overhead(5000, 1.05), undefined).map((t) => [t.name, t.met])).toEqual([
      ['proxy added latency', true],
      ['proxy throughput', true],
      ['proxy throughput, streaming', true],
    ]);
    expect(evaluateTargets(overhead(4999, 1.1), undefined).map((t) => t.met)).toEqual([false, false, false]);
  });
});

describe('the p99 TTFT plot', () => {
  it('draws one labelled bar per strategy and load, scaled to the largest value', () => {
    const svg = ttftSvg(balance({ round_robin: 640, local_least_load: 390, shared_least_load: 294, global_least_load: 282 }), 'title & co');
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('title &amp; co');
    const bars = svg.match(/<rect class="bar" x="[\d.]+" y="[\d.]+" width="[\d.]+" height="[\d.]+" fill="#/g) ?? [];
    expect(bars).toHaveLength(8);
    for (const v of ['640', '390', '294', '282', '50']) expect(svg).toContain(`>${v}</text>`);
  });
});

describe('keepMarkedSections', () => {
  it('carries over the marked sections a full run did not write, and replaces those it did', () => {
    const old = '# B\n\nold body\n\n<!-- memory:begin -->\n## Memory\nby hand\n<!-- memory:end -->\n\n<!-- floor:start -->\nold floor\n<!-- floor:end -->\n\n<!-- scale:begin -->\nscale\n<!-- scale:end -->\n';
    const fresh = '# B\n\nnew body\n\n<!-- floor:start -->\nnew floor\n<!-- floor:end -->\n';
    const out = keepMarkedSections(fresh, old);
    expect(out).toContain('new body');
    expect(out).not.toContain('old body');
    expect(out).toContain('new floor');
    expect(out).not.toContain('old floor');
    expect(out.indexOf('## Memory')).toBeLessThan(out.indexOf('scale\n'));
    expect(out).toContain('<!-- memory:begin -->\n## Memory\nby hand\n<!-- memory:end -->');
    expect(keepMarkedSections(fresh, '# nothing marked')).toBe(fresh);
  });
});
