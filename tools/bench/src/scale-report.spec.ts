import type { ScaleResult } from './scale';
import { SCALE_SVG, scaleMarkdown, scaleSvg, scaleTargets, spliceScale } from './scale-report';

const cell = (scheme: 'old' | 'new', instances: number, clients: number, us: number) => ({
  scheme,
  instances,
  clients,
  requests: 1000,
  seconds: 1,
  perSecond: 1000,
  scriptUsPerRequest: us,
  processCpuUsPerRequest: us * 1.5,
});

const result: ScaleResult = {
  settings: { instances: [8, 1000], clients: [1], cellMs: 3000, rounds: 3 },
  redisVersion: '7.0.15',
  floorUsPerRequest: 9,
  cells: [cell('old', 8, 1, 90), cell('new', 8, 1, 30), cell('old', 1000, 1, 12_000), cell('new', 1000, 1, 50)],
};

describe('scale report', () => {
  it('judges the cost targets on the new scripts only', () => {
    expect(scaleTargets(result).map((t) => [t.name, t.met])).toEqual([
      ['Redis CPU per request at 1,000 instances, 1 client', false],
      ['cost at 1,000 vs 8 instances, 1 client', false],
    ]);
    expect(scaleTargets(result)[1].measured).toBe('1.67× (50.0 vs 30.0 µs)');
  });

  it('replaces its own section and keeps the rest of the report', () => {
    const first = spliceScale('# Benchmarks\n\n## Overhead\n\nx\n', scaleMarkdown(result, 'run 1'));
    expect(first).toContain('## Overhead');
    expect(first).toContain('run 1');
    expect(first).toContain('| 1,000 | 1 | 12,000 | 18,000 | 1,000 | 50.0 | 75.0 | 1,000 |');
    const second = spliceScale(`${first}\n## Later section\n`, scaleMarkdown(result, 'run 2'));
    expect(second).not.toContain('run 1');
    expect(second).toContain('run 2');
    expect(second).toContain('## Later section');
    expect(second.match(/## Selection at fleet scale/g)).toHaveLength(1);
  });

  it('adds the process run when there is one', () => {
    const withFleet: ScaleResult = { ...result, fleet: [{ instances: 1000, proxies: 4, rps: 2500.4, p99Ms: 12.34, errors: 0, scriptUsPerRequest: 41.2, scriptsPerRequest: 2.01 }] };
    expect(scaleMarkdown(withFleet, 'h')).toContain('| 1,000 | 4 | 2,500 | 12.3 ms | 0 | 41.2 | 2.01 |');
    expect(scaleMarkdown(result, 'h')).not.toContain('Process run');
  });

  it('plots old and new per client count on log axes, with the 40 µs target, and links the plot', () => {
    const svg = scaleSvg(result, 'cost & size');
    expect(svg.match(/<polyline /g)).toHaveLength(2);
    expect(svg).toContain('cost &amp; size');
    expect(svg).toContain('target 40 µs');
    // Log scale from 10 µs to 100 ms: 12,000 µs is higher on the page (smaller y) than 50 µs.
    const ys = [...svg.matchAll(/points="([^"]+)"/g)].map((m) => m[1].split(' ').map((p) => Number(p.split(',')[1])));
    expect(ys[0][1]).toBeLessThan(ys[1][1]);
    expect(scaleMarkdown(result, 'h')).toContain(`](${SCALE_SVG})`);
  });
});
