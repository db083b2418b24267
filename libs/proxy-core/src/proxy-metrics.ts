import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { BoundCounter, BoundHistogram, CounterAlias, CounterFamily, HistogramFamily } from './bound-metrics';
import { CLIENT_GONE, type Exchange } from './exchange';

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** Time to first token: from tens of ms (a warm, idle engine) to minutes (a long prompt behind a queue). */
const TTFT_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 7.5, 10, 20, 30, 60, 120];
/** Inter-token latency: a few ms to a few hundred per token. */
const ITL_BUCKETS = [0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2.5];
/** The `model` label of a model the registry does not know: clients cannot make new series by naming models. */
export const OTHER_MODEL = 'other';
/** The `instance_id` label of an exchange that never held an instance. */
export const NO_INSTANCE = 'none';

export type StatusClass = '2xx' | '3xx' | '4xx' | '5xx' | 'client_gone';

export function statusClass(status: number): StatusClass {
  if (status === CLIENT_GONE) return 'client_gone';
  if (status >= 500) return '5xx';
  if (status >= 400) return '4xx';
  if (status >= 300) return '3xx';
  return '2xx';
}

/** One instance's series under one model label, bound once. */
export interface InstanceSeries {
  readonly prompt: BoundCounter;
  readonly completion: BoundCounter;
  requests(cls: StatusClass): BoundCounter;
}

/** One model label's series, bound once; an exchange looks it up once and keeps it (the SSE tap observes per event through it). */
export class ModelSeries {
  readonly duration: BoundHistogram;
  readonly ttft: BoundHistogram;
  readonly itl: BoundHistogram;
  readonly queueWait: BoundHistogram;
  private readonly byInstance = new Map<string, InstanceSeries>();

  constructor(readonly model: string, private readonly m: ProxyMetrics) {
    this.duration = m.requestDuration.child(model);
    this.ttft = m.timeToFirstToken.child(model);
    this.itl = m.interTokenLatency.child(model);
    this.queueWait = m.queueWait.child(model);
  }

  forget(instanceId: string): void {
    this.byInstance.delete(instanceId);
  }

  instance(instanceId: string): InstanceSeries {
    let s = this.byInstance.get(instanceId);
    if (!s) {
      const { m, model } = this;
      const byClass = new Map<StatusClass, BoundCounter>();
      s = {
        prompt: m.promptTokens.child(model, instanceId),
        completion: m.completionTokens.child(model, instanceId),
        requests(cls) {
          let c = byClass.get(cls);
          if (!c) byClass.set(cls, (c = m.modelRequests.child(model, instanceId, cls)));
          return c;
        },
      };
      this.byInstance.set(instanceId, s);
    }
    return s;
  }
}

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
  readonly httpRequests = new CounterFamily('switchyard_proxy_http_requests_total', 'HTTP responses on every route, by route, method and status', ['route', 'method', 'status'], this.registry);
  /** Deprecated: the same counts as switchyard_proxy_http_requests_total, kept one release. */
  readonly requests = new CounterAlias('switchyard_proxy_requests_total', 'Deprecated: use switchyard_proxy_http_requests_total (same counts); removed in the next release', this.httpRequests, this.registry);
  readonly modelRequests = new CounterFamily('switchyard_proxy_model_requests_total', 'Requests on the forwarded routes by model (unknown models: other), instance (none: none chosen) and status class (client_gone: the client left first)', ['model', 'instance_id', 'status_class'], this.registry);
  readonly requestDuration = new HistogramFamily('switchyard_proxy_request_duration_seconds', 'Forwarded requests from arrival to the end of the response (or the client leaving), by model', ['model'], LATENCY_BUCKETS, this.registry);
  readonly timeToFirstToken = new HistogramFamily('switchyard_proxy_time_to_first_token_seconds', 'From arrival to the first SSE data event sent to the client (whole bodies: to the body), successful answers, by model', ['model'], TTFT_BUCKETS, this.registry);
  readonly interTokenLatency = new HistogramFamily('switchyard_proxy_inter_token_latency_seconds', 'Gaps between successive SSE data events sent to the client, by model', ['model'], ITL_BUCKETS, this.registry);
  readonly queueWait = new HistogramFamily('switchyard_proxy_queue_wait_seconds', 'Time forwarded requests spent in the admission queue (0 when admitted at once), by model', ['model'], LATENCY_BUCKETS, this.registry);
  readonly promptTokens = new CounterFamily('switchyard_proxy_prompt_tokens_total', 'Prompt tokens from the answers\' usage, by model and instance', ['model', 'instance_id'], this.registry);
  readonly completionTokens = new CounterFamily('switchyard_proxy_completion_tokens_total', 'Completion tokens from the answers\' usage, by model and instance', ['model', 'instance_id'], this.registry);
  readonly upstreamDuration = new HistogramFamily('switchyard_proxy_upstream_duration_seconds', 'Time from forwarding to the end of the upstream body', ['route'], LATENCY_BUCKETS, this.registry);
  readonly upstreamTtfb = new HistogramFamily('switchyard_proxy_upstream_ttfb_seconds', 'Time from forwarding to the first upstream body byte (for whole bodies up to 1 MiB: to the response headers)', ['route'], LATENCY_BUCKETS, this.registry);
  readonly selections = new CounterFamily('switchyard_proxy_selections_total', 'Instances chosen, by strategy and instance', ['strategy', 'instance_id'], this.registry);
  readonly retries = new Counter({ name: 'switchyard_proxy_retries_total', help: 'Requests sent again to another instance, by reason', labelNames: ['reason'], registers: [this.registry] });
  readonly storeErrors = new Counter({ name: 'switchyard_proxy_store_errors_total', help: 'Failed calls to the shared store', registers: [this.registry] });

  /** Children bound once per label set, found without building a key per request. */
  private readonly requestCounters = new Map<string, Map<string, Map<number, BoundCounter>>>();
  /** By instance: the strategy is one per proxy. */
  private readonly selectionCounters = new Map<string, BoundCounter>();
  private readonly ttfbByRoute = new Map<string, BoundHistogram>();
  private readonly upstreamByRoute = new Map<string, BoundHistogram>();
  private readonly models = new Map<string, ModelSeries>();

  /**
   * The series of a model label: the model itself when `known` (in the registry), else `other`.
   * One Map lookup per exchange; everything under it is bound already.
   */
  series(model: string | null, known: boolean): ModelSeries {
    const label = model !== null && known ? model : OTHER_MODEL;
    let s = this.models.get(label);
    if (!s) this.models.set(label, (s = new ModelSeries(label, this)));
    return s;
  }

  /** Instances some series is labelled with (not `none`). */
  instanceIds(): Set<string> {
    return new Set(this.selectionCounters.keys());
  }

  /** An instance gone from the registry: its series go, so a fleet that churns instances does not grow /metrics without end. */
  forgetInstance(instanceId: string): void {
    for (const family of [this.modelRequests, this.promptTokens, this.completionTokens, this.selections]) family.removeWhere('instance_id', instanceId);
    this.selectionCounters.delete(instanceId);
    for (const s of this.models.values()) s.forget(instanceId);
  }

  /** A forwarded exchange's end: requests, duration, TTFT (whole bodies), queue wait and tokens under its model label. */
  observeExchange(ex: Exchange, series: ModelSeries): void {
    const inst = series.instance(ex.instanceId ?? NO_INSTANCE);
    inst.requests(statusClass(ex.status)).inc();
    series.duration.observe((performance.now() - ex.startedAt) / 1000);
    if (ex.firstTokenAt !== null) series.ttft.observe((ex.firstTokenAt - ex.startedAt) / 1000);
    if (ex.attempts > 0 || ex.queueWaitMs > 0) series.queueWait.observe(ex.queueWaitMs / 1000);
    if (ex.usage) {
      inst.prompt.inc(ex.usage.prompt_tokens);
      inst.completion.inc(ex.usage.completion_tokens);
    }
  }


  /** Route labels are a fixed few, statuses a few dozen: nested maps, no key string built per request. */
  countRequest(route: string, method: string, status: number): void {
    let byStatus = this.requestCounters.get(route)?.get(method);
    if (!byStatus) {
      let byMethod = this.requestCounters.get(route);
      if (!byMethod) this.requestCounters.set(route, (byMethod = new Map()));
      byMethod.set(method, (byStatus = new Map()));
    }
    let c = byStatus.get(status);
    if (!c) byStatus.set(status, (c = this.httpRequests.child(route, method, String(status))));
    c.inc();
  }

  countSelection(strategy: string, instanceId: string): void {
    let c = this.selectionCounters.get(instanceId);
    if (!c) this.selectionCounters.set(instanceId, (c = this.selections.child(strategy, instanceId)));
    c.inc();
  }

  observeTtfb(route: string, seconds: number): void {
    let h = this.ttfbByRoute.get(route);
    if (!h) this.ttfbByRoute.set(route, (h = this.upstreamTtfb.child(route)));
    h.observe(seconds);
  }

  observeUpstream(route: string, seconds: number): void {
    let h = this.upstreamByRoute.get(route);
    if (!h) this.upstreamByRoute.set(route, (h = this.upstreamDuration.child(route)));
    h.observe(seconds);
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
