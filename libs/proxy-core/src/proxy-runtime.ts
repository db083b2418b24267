import Redis from 'ioredis';
import pino, { Logger } from 'pino';
import { makeProxyId, ProxyInfo, REGISTRY_SNAPSHOT_EVENT, RegistrySnapshot } from '@switchyard/contracts';
import type { LoadStore } from '@switchyard/load-store';
import { ExchangeCounter } from './exchange-counter';
import { LocalCounts } from './local-counts';
import type { ProxyConfig } from './proxy-config';
import { ProxyMetrics } from './proxy-metrics';
import { RegistryCache } from './registry-cache';

export interface ProxyRuntimeOptions {
  /** Redis URL to hear the control plane's registry events on; none in single-process mode. */
  eventsUrl?: string;
  logger?: Logger;
}

/**
 * A proxy's state outside the request path: identity, lease, local counts and
 * their reconciliation, the registry snapshot, and whether the store answers.
 */
export class ProxyRuntime {
  readonly proxyId: string;
  readonly registry: RegistryCache;
  readonly counts = new LocalCounts();
  readonly metrics: ProxyMetrics;
  readonly exchanges = new ExchangeCounter();
  draining = false;
  readonly queued: Record<string, number> = {};
  degraded = false;
  /** Whether a control plane held its lease at the last renewal (see noteControlPlane). */
  controlPlaneReachable = true;
  /** Store acquires sent and not yet answered. */
  pendingAcquires = 0;
  lastStoreError = '';
  private timers: NodeJS.Timeout[] = [];
  private capacityListeners: (() => void)[] = [];
  private subscriber?: Redis;
  /** JSON logs; request bodies are never logged. */
  readonly logger: Logger;

  constructor(readonly config: ProxyConfig, readonly store: LoadStore, private readonly options: ProxyRuntimeOptions = {}) {
    this.proxyId = makeProxyId(config.PROXY_NAME);
    this.registry = new RegistryCache(store);
    this.logger = options.logger ?? pino({ level: config.LOG_LEVEL, base: { proxy_id: this.proxyId } });
    this.metrics = new ProxyMetrics({
      inflightHttp: () => this.exchanges.open,
      degraded: () => this.degraded,
      controlPlaneReachable: () => this.controlPlaneReachable,
      draining: () => this.draining,
      registrySize: () => this.registry.size,
      instanceInflight: () => this.counts.view,
      queued: () => this.queued,
    });
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
        if (Date.now() > deadline) return this.storeFailed(err);
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

  /** Called whenever capacity may have freed: a local release, another proxy's release heard over Redis, a registry change. */
  onCapacity(listener: () => void): void {
    this.capacityListeners.push(listener);
  }

  private capacityFreed(): void {
    for (const l of this.capacityListeners) l();
  }

  /** Takes note of a slot this proxy now holds on an instance; the returned function gives it back, once. */
  slot(instanceId: string): () => void {
    this.counts.inc(instanceId);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.counts.dec(instanceId);
      // While degraded the store has lost track anyway; reconciliation rewrites this proxy's share when it is back.
      if (this.degraded) return this.capacityFreed();
      this.store.release(this.proxyId, instanceId).then(
        () => this.capacityFreed(),
        (err) => this.storeFailed(err),
      );
    };
  }

  info(): ProxyInfo {
    return { proxy_id: this.proxyId, inflight_http: this.exchanges.open, queued: { ...this.queued }, draining: this.draining, degraded: this.degraded };
  }

  storeFailed(err: unknown): void {
    this.metrics.storeErrors.inc();
    this.lastStoreError = (err as Error)?.message ?? String(err);
    if (!this.degraded) {
      this.degraded = true;
      this.logger.warn(`store unreachable (${this.lastStoreError}): routing on the local registry snapshot and this proxy's own counts`);
    }
  }

  /** The lease renewal doubles as the store probe: the first success after a failure reconciles and re-pulls. */
  async renewLease(): Promise<void> {
    try {
      const { controlPlaneAlive } = await this.store.renewLease(this.info(), this.config.LEASE_TTL_S * 1000);
      this.noteControlPlane(controlPlaneAlive);
    } catch (err) {
      this.storeFailed(err);
      return;
    }
    if (this.degraded) {
      this.degraded = false;
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

  /** Rewrites this proxy's shared contribution from its local truth, so a lost release heals. */
  async reconcile(): Promise<void> {
    // An acquire still awaiting its answer has already counted in the store but not yet
    // here; a rewrite sent now would erase it. Wait briefly for a quiet moment, then go anyway.
    for (let i = 0; i < 25 && this.pendingAcquires > 0; i++) await new Promise((r) => setTimeout(r, 20));
    if (this.degraded) return;
    await this.store.reconcile(this.proxyId, this.counts.toRecord()).catch((err) => this.storeFailed(err));
  }

  async pullRegistry(): Promise<void> {
    if (this.degraded) return;
    await this.registry.pull().catch((err) => this.storeFailed(err));
  }

  private subscribe(url: string): void {
    const sub = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: null, retryStrategy: (n) => Math.min(100 * n, 2000), connectionName: `${this.proxyId}-events` });
    sub.on('error', () => undefined);
    // A reconnect may have missed snapshots: re-pull, as on start.
    const channels = [REGISTRY_SNAPSHOT_EVENT, ...(this.store.capacityChannel ? [this.store.capacityChannel] : [])];
    sub.on('ready', () => void sub.subscribe(...channels).then(() => this.pullRegistry(), () => undefined));
    sub.on('message', (channel: string, message: string) => {
      if (channel !== REGISTRY_SNAPSHOT_EVENT) return this.capacityFreed();
      try {
        const packet = JSON.parse(message) as { data?: RegistrySnapshot };
        if (packet.data && this.registry.applySnapshot(packet.data)) this.capacityFreed();
      } catch {
        // A malformed event is dropped; the next pull corrects the snapshot.
      }
    });
    this.subscriber = sub;
  }
}
