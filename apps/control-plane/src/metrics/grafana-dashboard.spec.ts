import { readFileSync } from 'node:fs';
import path from 'node:path';
import { MemoryLoadStore } from '@switchyard/load-store';
import { ProxyMetrics } from '@switchyard/proxy-core';
import { ControlPlaneMetrics } from './control-plane-metrics';

const DASHBOARD = path.resolve(__dirname, '../../../../deploy/grafana/switchyard.json');

interface Target {
  expr: string;
  datasource?: { type: string; uid: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  datasource?: { type: string; uid: string };
  targets?: Target[];
}
interface Dashboard {
  schemaVersion: number;
  uid: string;
  title: string;
  __inputs: { name: string; type: string; pluginId: string }[];
  panels: Panel[];
  templating: { list: { name: string; type: string; query: string | { query: string }; datasource?: { uid: string } }[] };
}

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset', 'and', 'or', 'unless', 'inf', 'nan']);

/**
 * The metric names a PromQL expression reads: strings, label matchers, grouping clauses, ranges and
 * dashboard variables removed, what is left that is an identifier and not a function call is a
 * metric. Histogram series (_bucket, _sum, _count) are named by their histogram.
 */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ');
  const names = new Set<string>();
  for (const m of bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const after = bare.slice((m.index ?? 0) + m[0].length).trimStart();
    if (after.startsWith('(') || KEYWORDS.has(m[0].toLowerCase())) continue;
    names.add(m[0].replace(/_(bucket|sum|count)$/, ''));
  }
  return [...names];
}

/** label_values(metric, label) in a variable query reads that metric. */
function variableMetrics(query: string): string[] {
  const m = /label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(query);
  return m ? [m[1]] : [];
}

describe('Grafana dashboard (deploy/grafana/switchyard.json)', () => {
  const dash = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
  const panels = dash.panels.filter((p) => p.type !== 'row');

  it('is importable: schema version, uid, a Prometheus input and datasource variable every query uses, a model variable', () => {
    expect(dash.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(dash.uid).toBe('switchyard');
    expect(dash.__inputs).toEqual([expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' })]);
    const vars = Object.fromEntries(dash.templating.list.map((v) => [v.name, v]));
    expect(vars.datasource).toMatchObject({ type: 'datasource', query: 'prometheus' });
    expect(vars.model).toMatchObject({ type: 'query', datasource: { uid: '${datasource}' } });
    expect(new Set(dash.panels.map((p) => p.id)).size).toBe(dash.panels.length);
    for (const p of panels) {
      expect([p.title, p.datasource?.uid]).toEqual([p.title, '${datasource}']);
      expect(p.targets?.length).toBeGreaterThan(0);
      for (const t of p.targets ?? []) expect([p.title, t.datasource?.uid]).toEqual([p.title, '${datasource}']);
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
    }
  });

  it('finds metric names in PromQL the way the check below needs', () => {
    expect(metricNames('histogram_quantile(0.99, sum by (model, le) (rate(a_seconds_bucket{model=~"$model", x="y{z}"}[$__rate_interval])))')).toEqual(['a_seconds']);
    expect(metricNames('sum(rate(x_total{s="5xx"}[5m])) / on (model) group_left sum by (model) (y) > bool 0.5')).toEqual(['x_total', 'y']);
  });

  it('queries only metrics the proxy and the control plane export', () => {
    const proxy = new ProxyMetrics(
      { inflightHttp: () => 0, degraded: () => false, controlPlaneReachable: () => true, draining: () => false, registrySize: () => 0, instanceInflight: () => new Map(), queued: () => ({}) },
      { proxyId: 'p@1', worker: 1 },
    );
    const controlPlane = new ControlPlaneMetrics(new MemoryLoadStore());
    const exported = new Set([...proxy.registry.getMetricsAsArray(), ...controlPlane.registry.getMetricsAsArray()].map((m) => m.name));
    const queried = new Set<string>();
    for (const p of panels) for (const t of p.targets ?? []) for (const name of metricNames(t.expr)) queried.add(name);
    for (const v of dash.templating.list) for (const name of variableMetrics(typeof v.query === 'string' ? v.query : v.query.query)) queried.add(name);
    expect(queried.size).toBeGreaterThan(10);
    expect([...queried].filter((name) => !exported.has(name)).sort()).toEqual([]);
  });
});
