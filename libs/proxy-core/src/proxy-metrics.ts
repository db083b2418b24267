import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** Live state read at scrape time. */
export interface MetricsSource {
  inflightHttp(): number;
  degraded(): boolean;
  controlPlaneReachable(): boolean;
  draining(): boolean;
  registrySize(): number;
  instanceInflight(): ReadonlyMap<string, number>;
  queued(): Readonly<Record<string, number>>;
}

/** The proxy's Prometheus metrics, in a registry of its own (single-process mode runs two apps in one process). */
export class ProxyMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({ name: 'switchyard_proxy_requests_total', help: 'HTTP responses on every route, by route, method and status', labelNames: ['route', 'method', 'status'], registers: [this.registry] });
  readonly upstreamDuration = new Histogram({ name: 'switchyard_proxy_upstream_duration_seconds', help: 'Time from forwarding to the end of the upstream body', labelNames: ['route'], buckets: LATENCY_BUCKETS, registers: [this.registry] });
  readonly upstreamTtfb = new Histogram({ name: 'switchyard_proxy_upstream_ttfb_seconds', help: 'Time from forwarding to the first upstream body byte (for whole bodies up to 1 MiB: to the response headers)', labelNames: ['route'], buckets: LATENCY_BUCKETS, registers: [this.registry] });
  readonly selections = new Counter({ name: 'switchyard_proxy_selections_total', help: 'Instances chosen, by strategy and instance', labelNames: ['strategy', 'instance_id'], registers: [this.registry] });
  readonly retries = new Counter({ name: 'switchyard_proxy_retries_total', help: 'Requests sent again to another instance, by reason', labelNames: ['reason'], registers: [this.registry] });
  readonly storeErrors = new Counter({ name: 'switchyard_proxy_store_errors_total', help: 'Failed calls to the shared store', registers: [this.registry] });

  /** Children bound once per label set: prom-client would otherwise hash a label object on every call on the hot path. */
  private readonly bound = new Map<string, { inc(): void } | { observe(v: number): void }>();

  private child<T>(key: string, make: () => T): T {
    let c = this.bound.get(key) as T | undefined;
    if (!c) this.bound.set(key, (c = make()) as never);
    return c;
  }

  countRequest(route: string, method: string, status: number): void {
    this.child(`r ${route} ${method} ${status}`, () => this.requests.labels(route, method, String(status))).inc();
  }

  countSelection(strategy: string, instanceId: string): void {
    this.child(`s ${strategy} ${instanceId}`, () => this.selections.labels(strategy, instanceId)).inc();
  }

  observeTtfb(route: string, seconds: number): void {
    this.child(`t ${route}`, () => this.upstreamTtfb.labels(route)).observe(seconds);
  }

  observeUpstream(route: string, seconds: number): void {
    this.child(`u ${route}`, () => this.upstreamDuration.labels(route)).observe(seconds);
  }

  constructor(source: MetricsSource, identity: { proxyId: string; worker: number }) {
    const registers = [this.registry];
    // Which proxy (and which worker of a WORKERS=N process) answered this scrape.
    new Gauge({ name: 'switchyard_proxy_info', help: 'This proxy: its id and worker number; always 1', labelNames: ['proxy_id', 'worker'], registers }).set({ proxy_id: identity.proxyId, worker: String(identity.worker) }, 1);
    const scalar = (name: string, help: string, read: () => number) =>
      new Gauge({ name, help, registers, collect() { this.set(read()); } });
    scalar('switchyard_proxy_degraded', '1 while the store is unreachable and the proxy routes on local counts', () => (source.degraded() ? 1 : 0));
    scalar('switchyard_proxy_control_plane_reachable', '1 while a control plane holds its lease in the store; 0 while none does and routing goes on with the last known liveness', () => (source.controlPlaneReachable() ? 1 : 0));
    scalar('switchyard_proxy_draining', '1 once the proxy has begun to drain', () => (source.draining() ? 1 : 0));
    scalar('switchyard_proxy_inflight_http', 'Open HTTP exchanges on every route', () => source.inflightHttp());
    scalar('switchyard_proxy_registry_instances', 'Instances in the local registry snapshot', () => source.registrySize());
    new Gauge({
      name: 'switchyard_proxy_instance_inflight',
      help: "This proxy's in-flight requests per instance",
      labelNames: ['instance_id'],
      registers,
      collect() {
        this.reset();
        for (const [id, n] of source.instanceInflight()) this.set({ instance_id: id }, n);
      },
    });
    new Gauge({
      name: 'switchyard_proxy_queue_depth',
      help: 'Requests waiting for capacity, by model',
      labelNames: ['model'],
      registers,
      collect() {
        this.reset();
        for (const [model, n] of Object.entries(source.queued())) this.set({ model }, n);
      },
    });
    collectDefaultMetrics({ register: this.registry, prefix: 'switchyard_proxy_' });
  }
}
