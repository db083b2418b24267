import Redis from 'ioredis';
import pino, { Logger } from 'pino';
import { logTimestamp } from '@switchyard/config';
import { makeProxyId, ProxyInfo, REGISTRY_SNAPSHOT_EVENT, RegistrySnapshotEvent } from '@switchyard/contracts';
import type { LoadStore } from '@switchyard/load-store';
import { AdmissionQueue } from './admission-queue';
import { Exchanges } from './exchange';
import { InstanceStatsRecorder } from './instance-stats';
import type { ProxyConfig } from './proxy-config';
import { ProxyMetrics } from './proxy-metrics';
import { RegistryCache } from './registry-cache';
import { Slots } from './slots';
import type { ProxyTracing } from './tracing';

export interface ProxyRuntimeOptions {
  /** Redis URL to hear the control plane's registry events on; none in single-process mode. */
  eventsUrl?: string;
  logger?: Logger;
  /** Which worker of a WORKERS=N process this proxy is (node:cluster's worker id), published in /metrics. */
  worker?: number;
  /** Traces, when OTEL_EXPORTER_OTLP_ENDPOINT turned them on (startTracing); undefined: off. */
  tracing?: ProxyTracing;
}

/**
 * A proxy's state outside the request path: identity, lease, the registry snapshot,
 * and the parts it wires together once: the Slots ledger, the admission queue that
 * asks it, and the open exchanges.
 */
export class ProxyRuntime {
  readonly proxyId: string;
  readonly registry: RegistryCache;
  readonly slots: Slots;
  readonly queue: AdmissionQueue;
  readonly metrics: ProxyMetrics;
  readonly exchanges = new Exchanges();
  readonly tracing?: ProxyTracing;
  /** Request counters per instance, counted at each exchange's end and written with the lease. */
  readonly stats = new InstanceStatsRecorder();
  draining = false;
  /** Instances seen in metrics or counters but missing from the last registry pull. */
  private readonly missing = new Set<string>();
  /** Whether a control plane held its lease at the last renewal (see noteControlPlane). */
  controlPlaneReachable = true;
  private timers: NodeJS.Timeout[] = [];
  private subscriber?: Redis;
  private pulling?: Promise<void>;
  /** JSON logs; request bodies are never logged. */
  readonly logger: Logger;

  constructor(readonly config: ProxyConfig, readonly store: LoadStore, private readonly options: ProxyRuntimeOptions = {}) {
    this.proxyId = makeProxyId(config.PROXY_NAME);
    this.registry = new RegistryCache(store);
    this.logger = options.logger ?? pino({ level: config.LOG_LEVEL, base: { proxy_id: this.proxyId }, timestamp: logTimestamp(config.LOG_TIME) });
    this.tracing = options.tracing;
    this.slots = new Slots({
      store,
      registry: this.registry,
      proxyId: this.proxyId,
      strategy: config.ROUTING_STRATEGY,
      cooldownMs: config.FAILURE_COOLDOWN_S * 1000,
      affinityTtlMs: config.AFFINITY_TTL_S * 1000,
      onStoreError: (err, first) => {
        this.metrics.storeErrors.inc();
        if (first) this.logger.warn(`store unreachable (${(err as Error)?.message ?? String(err)}): routing on the local registry snapshot and this proxy's own counts`);
      },
    });
    this.queue = new AdmissionQueue({ max: config.QUEUE_MAX, timeoutMs: config.QUEUE_TIMEOUT_S * 1000, slots: this.slots });
    this.slots.onCapacity(() => this.queue.kick());
    this.metrics = new ProxyMetrics({
      inflightHttp: () => this.exchanges.open,
      degraded: () => this.slots.degraded,
      controlPlaneReachable: () => this.controlPlaneReachable,
      draining: () => this.draining,
      registrySize: () => this.registry.size,
      instanceInflight: () => this.slots.view,
      queued: () => this.queue.depth,
    }, { proxyId: this.proxyId, worker: options.worker ?? 1 });
  }

  get degraded(): boolean {
    return this.slots.degraded;
  }

  async start(): Promise<void> {
    await this.waitForStore(5000);
    await this.renewLease();
    await this.pullRegistry();
    const every = (s: number, fn: () => Promise<void>) => {
      const t = setInterval(() => void fn(), s * 1000);
      t.unref();
      this.timers.push(t);
    };
    every(1, () => this.renewLease());
    every(this.config.REGISTRY_RESYNC_S, () => this.pullRegistry());
    every(this.config.RECONCILE_S, () => this.reconcile());
    if (this.options.eventsUrl) this.subscribe(this.options.eventsUrl);
  }

  /** Gives the store a moment to connect; a proxy that starts during an outage serves degraded rather than not at all. */
  private async waitForStore(ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    for (;;) {
      try {
        return await this.store.ping();
      } catch (err) {
        if (Date.now() > deadline) return this.slots.storeFailed(err);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    this.subscriber?.disconnect();
    // Dropping the lease removes this proxy's contributions at once.
    await this.store.dropLease(this.proxyId).catch(() => undefined);
  }

  info(): ProxyInfo {
    return { proxy_id: this.proxyId, inflight_http: this.exchanges.open, queued: { ...this.queue.depth }, draining: this.draining, degraded: this.slots.degraded };
  }

  /** The one caller of store.renewLease; it doubles as the store probe: the first success after a failure reconciles and re-pulls. */
  async renewLease(): Promise<void> {
    try {
      const { controlPlaneAlive } = await this.store.renewLease(this.info(), this.config.LEASE_TTL_S * 1000, this.stats.snapshot());
      this.noteControlPlane(controlPlaneAlive);
    } catch (err) {
      this.slots.storeFailed(err);
      return;
    }
    if (this.slots.storeAnswered()) {
      this.logger.info('store reachable again: reconciling this proxy’s counts');
      await this.reconcile();
      await this.pullRegistry();
    }
  }

  /**
   * No control plane holds its lease: liveness is no longer refreshed, and the store keeps the
   * last liveness; routing goes on as it was. Said in /readyz and a metric, never not-ready.
   */
  private noteControlPlane(alive: boolean): void {
    if (alive === this.controlPlaneReachable) return;
    this.controlPlaneReachable = alive;
    if (alive) this.logger.info('control plane holds its lease again: liveness is refreshed again');
    else this.logger.warn('no control plane holds its lease: routing on the last known liveness until one returns');
  }

  reconcile(): Promise<void> {
    return this.slots.reconcile();
  }

  /** One pull at a time: callers during a pull share it. */
  pullRegistry(): Promise<void> {
    if (this.slots.degraded) return Promise.resolve();
    this.pulling ??= this.registry
      .pull()
      .then(() => this.forgetRemoved())
      .catch((err) => this.slots.storeFailed(err))
      .finally(() => (this.pulling = undefined));
    return this.pulling;
  }

  /**
   * Metric series and request counters of instances gone from the registry are dropped once a
   * second pull still does not have them (one pull could lag an instance just registered).
   */
  private forgetRemoved(): void {
    for (const id of new Set([...this.metrics.instanceIds(), ...this.stats.ids()])) {
      if (this.registry.get(id)) this.missing.delete(id);
      else if (!this.missing.has(id)) this.missing.add(id);
      else {
        this.missing.delete(id);
        this.metrics.forgetInstance(id);
        this.stats.forget(id);
      }
    }
  }

  private subscribe(url: string): void {
    const sub = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: null, retryStrategy: (n) => Math.min(100 * n, 2000), connectionName: `${this.proxyId}-events` });
    sub.on('error', () => undefined);
    // A reconnect may have missed snapshots: re-pull, as on start.
    const channels = [REGISTRY_SNAPSHOT_EVENT, ...(this.store.capacityChannel ? [this.store.capacityChannel] : [])];
    sub.on('ready', () => void sub.subscribe(...channels).then(() => this.pullRegistry(), () => undefined));
    sub.on('message', (channel: string, message: string) => {
      if (channel !== REGISTRY_SNAPSHOT_EVENT) return this.slots.capacityFreed();
      try {
        const packet = JSON.parse(message) as { data?: RegistrySnapshotEvent };
        if (packet.data && this.registry.applySnapshot(packet.data)) this.slots.capacityFreed();
        // Keys travel only through the store: a new instance's key is read at once, not at the next resync.
        if (this.registry.keysMissing) void this.pullRegistry();
      } catch {
        // A malformed event is dropped; the next pull corrects the snapshot.
      }
    });
    this.subscriber = sub;
  }
}
