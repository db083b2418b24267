import type { Registry } from 'prom-client';

/** One sample as prom-client's Registry renders it. */
interface Sample {
  metricName?: string;
  labels: Record<string, string | number>;
  value: number;
}

/** What prom-client's Registry reads from a metric at scrape time. */
export interface MetricSnapshot {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  values: Sample[];
}

/**
 * Counter and histogram families whose children are plain objects bound once per label set:
 * `inc()` and `observe()` touch a number or a typed array and nothing else. prom-client's own
 * bound children still build and hash a label object on every call, which is what the proxy's
 * per-token path (inter-token latency) cannot afford. The families register in a prom-client
 * Registry through its metric interface (`name`, `help`, `type`, `get()`), so /metrics renders
 * them like any other.
 */
abstract class Family<C> {
  private readonly children = new Map<string, { labels: Record<string, string>; child: C }>();

  constructor(readonly name: string, readonly help: string, readonly labelNames: readonly string[], registry: Registry) {
    registry.registerMetric(this as never);
  }

  /** The child for these label values, made on first use; callers keep it rather than ask again per request. */
  child(...values: string[]): C {
    const key = values.join('\u0000');
    let entry = this.children.get(key);
    if (!entry) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((n, i) => (labels[n] = values[i]));
      entry = { labels, child: this.make() };
      this.children.set(key, entry);
    }
    return entry.child;
  }

  /** Drops every child whose `label` is `value` (an instance gone from the registry). */
  removeWhere(label: string, value: string): void {
    for (const [key, entry] of this.children) if (entry.labels[label] === value) this.children.delete(key);
  }

  protected abstract make(): C;

  protected entries(): Iterable<{ labels: Record<string, string>; child: C }> {
    return this.children.values();
  }
}

export interface BoundCounter {
  value: number;
  inc(by?: number): void;
}

export class CounterFamily extends Family<BoundCounter> {
  readonly type = 'counter';
  readonly aggregator = 'sum';

  protected make(): BoundCounter {
    return {
      value: 0,
      inc(by = 1) {
        this.value += by;
      },
    };
  }

  get(): MetricSnapshot {
    const values: Sample[] = [];
    for (const { labels, child } of this.entries()) values.push({ labels, value: child.value });
    return { name: this.name, help: this.help, type: this.type, aggregator: 'sum', values };
  }
}

export interface BoundHistogram {
  observe(value: number): void;
}

class HistogramChild implements BoundHistogram {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && value > b[i]) i++;
    if (i < b.length) this.counts[i] += 1;
    this.sum += value;
    this.count += 1;
  }
}

export class HistogramFamily extends Family<BoundHistogram> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';

  constructor(name: string, help: string, labelNames: readonly string[], private readonly bounds: readonly number[], registry: Registry) {
    super(name, help, labelNames, registry);
  }

  protected make(): BoundHistogram {
    return new HistogramChild(this.bounds);
  }

  get(): MetricSnapshot {
    const values: Sample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const { labels, child } of this.entries()) {
      const h = child as HistogramChild;
      let acc = 0;
      this.bounds.forEach((le, i) => {
        acc += h.counts[i];
        values.push({ metricName: bucket, labels: { le, ...labels }, value: acc });
      });
      values.push({ metricName: bucket, labels: { le: '+Inf', ...labels }, value: h.count });
      values.push({ metricName: `${this.name}_sum`, labels, value: h.sum });
      values.push({ metricName: `${this.name}_count`, labels, value: h.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: 'sum', values };
  }
}

/**
 * A counter family under another name (a deprecated one kept for a release): the same children,
 * so the counts are kept once and rendered twice, at no cost per request.
 */
export class CounterAlias {
  readonly type = 'counter';
  readonly aggregator = 'sum';

  constructor(readonly name: string, readonly help: string, private readonly of: CounterFamily, registry: Registry) {
    registry.registerMetric(this as never);
  }

  get labelNames(): readonly string[] {
    return this.of.labelNames;
  }

  get(): MetricSnapshot {
    return { ...this.of.get(), name: this.name, help: this.help };
  }
}
