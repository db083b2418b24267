import { EngineSignals, InstanceRecord, InstanceState, InstanceStats, ModelInfo, ProxyInfo, ProxyState, RegistrySnapshot, sumInstanceStats, UNKNOWN_ENGINE } from '@switchyard/contracts';
import { Candidate, pick } from '@switchyard/routing';
import {
  AcquireRequest,
  AcquireResult,
  AffinityBinding,
  FleetState,
  HeartbeatResult,
  HeartbeatUpdate,
  InstanceLiveness,
  LeaseRenewal,
  LoadStore,
  MarkDownResult,
  REAP_GRACE_MS,
  RegisterResult,
  RegistryCursor,
  RegistrySync,
} from './load-store';

interface Entry {
  record: InstanceRecord;
  lastSeen: number;
  /** lastSeen + ttl, moved on when a control plane reclaims a lapsed lease. */
  expiresAt: number;
  /** Failed probes took it out; the next heartbeat brings it back. */
  down: boolean;
  /** Not yet reported by sweepLiveness as lapsed (and not marked down). */
  watched: boolean;
  qps: number | null;
  gpu: number | null;
  inflight: number;
  engine: EngineSignals;
  saturated: boolean;
}

interface Lease {
  info: ProxyInfo;
  expiresAt: number;
  lastSeen: number;
  /** When a sweep first found it expired; cleared by a renewal. */
  expiredSince?: number;
  contributions: Map<string, number>;
  /** Request counters per instance, as of the last renewal that carried them. */
  stats: Record<string, InstanceStats>;
}

export interface MemoryLoadStoreOptions {
  now?: () => number;
  random?: () => number;
  /** See REAP_GRACE_MS. */
  reapGraceMs?: number;
}

/** Single-process store: the same semantics as RedisLoadStore, held in this process. */
export class MemoryLoadStore implements LoadStore {
  private readonly instances = new Map<string, Entry>();
  private readonly leases = new Map<string, Lease>();
  private readonly tickets = new Map<string, number>();
  /** Affinity key -> the instance it is bound to, until when (store clock). */
  private readonly affinity = new Map<string, { id: string; until: number }>();
  private version = 0;
  /** Liveness and engine changes: a sequence number, and the last one of each instance. */
  private changeSeq = 0;
  private readonly changedAt = new Map<string, number>();
  private controlPlane: { holder: string; until: number; watch: number } | null = null;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly reapGraceMs: number;

  constructor(options: MemoryLoadStoreOptions = {}) {
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.reapGraceMs = options.reapGraceMs ?? REAP_GRACE_MS;
  }

  async register(record: Omit<InstanceRecord, 'registered_at'>): Promise<RegisterResult> {
    const now = this.now();
    const existing = this.instances.get(record.instance_id);
    const live = { lastSeen: now, expiresAt: now + ttlMs(record.ttl_s), down: false, watched: true };
    const entry: Entry = existing
      ? { ...existing, ...live, record: { ...record, registered_at: existing.record.registered_at } }
      : { ...live, record: { ...record, registered_at: now }, qps: null, gpu: null, inflight: 0, engine: UNKNOWN_ENGINE, saturated: false };
    this.instances.set(record.instance_id, entry);
    this.version += 1;
    return { created: !existing, state: this.toState(entry, now) };
  }

  async heartbeat(instanceId: string, update: HeartbeatUpdate): Promise<HeartbeatResult> {
    const entry = this.instances.get(instanceId);
    if (!entry) return 'unknown';
    const now = this.now();
    const wasAlive = this.isAlive(entry, now);
    entry.lastSeen = now;
    entry.expiresAt = now + ttlMs(entry.record.ttl_s);
    entry.down = false;
    entry.watched = true;
    if (!wasAlive || (update.qps_1m !== undefined && update.qps_1m !== entry.qps)) this.changed(instanceId);
    if (update.qps_1m !== undefined) entry.qps = update.qps_1m;
    if (update.gpu_util !== undefined) entry.gpu = update.gpu_util;
    return wasAlive ? 'alive' : 'revived';
  }

  async reportEngine(instanceId: string, signals: EngineSignals, saturated: boolean): Promise<boolean> {
    const entry = this.instances.get(instanceId);
    if (!entry) return false;
    if (signals.waiting !== entry.engine.waiting || saturated !== entry.saturated) this.changed(instanceId);
    entry.engine = { ...signals };
    entry.saturated = saturated;
    return true;
  }

  async markDown(instanceId: string): Promise<MarkDownResult> {
    const entry = this.instances.get(instanceId);
    if (!entry) return 'unknown';
    const wasAlive = this.isAlive(entry, this.now());
    if (wasAlive) this.changed(instanceId);
    entry.down = true;
    entry.watched = false;
    return wasAlive ? 'was_alive' : 'already_down';
  }

  async sweepLiveness(): Promise<string[]> {
    const at = this.judgedAt(this.now());
    const lapsed: string[] = [];
    for (const entry of this.instances.values()) {
      if (entry.watched && entry.expiresAt < at) {
        entry.watched = false;
        lapsed.push(entry.record.instance_id);
        this.changed(entry.record.instance_id);
      }
    }
    return lapsed.sort();
  }

  async claimControlPlane(replicaId: string, ttl: number, renewMs: number): Promise<boolean> {
    const now = this.now();
    const cp = this.controlPlane;
    if (cp && cp.holder !== replicaId && cp.until >= now) return false;
    // Time with no control plane does not count against anyone's ttl.
    if (cp && cp.until < now) for (const entry of this.instances.values()) entry.expiresAt += Math.max(0, now - cp.watch);
    this.controlPlane = { holder: replicaId, until: now + ttl, watch: now + renewMs };
    return true;
  }

  async remove(instanceId: string): Promise<boolean> {
    if (!this.instances.delete(instanceId)) return false;
    this.changedAt.delete(instanceId);
    for (const lease of this.leases.values()) lease.contributions.delete(instanceId);
    this.version += 1;
    return true;
  }

  async getInstance(instanceId: string): Promise<InstanceState | null> {
    const entry = this.instances.get(instanceId);
    return entry ? this.toState(entry, this.now()) : null;
  }

  async listInstances(): Promise<InstanceState[]> {
    return this.instancesAt(this.now());
  }

  async updateModelInfo(record: Omit<InstanceRecord, 'registered_at'>, info: Record<string, ModelInfo>, at: number): Promise<boolean> {
    const entry = this.instances.get(record.instance_id);
    if (!entry) return false;
    const { registered_at, ...current } = entry.record;
    if (JSON.stringify(current) !== JSON.stringify(record)) return false;
    entry.record = { ...current, model_info: info, model_info_at: at, registered_at };
    this.version += 1;
    return true;
  }

  async snapshot(): Promise<RegistrySnapshot> {
    const instances = [...this.instances.values()].map((e) => e.record).sort(byId);
    return { version: this.version, generated_at: this.now(), instances };
  }

  async syncRegistry(since: RegistryCursor | null): Promise<RegistrySync> {
    const now = this.now();
    const at = this.judgedAt(now);
    const cursor = { version: this.version, changes: this.changeSeq, at };
    const liveness = (e: Entry): InstanceLiveness => ({
      instance_id: e.record.instance_id,
      is_alive: this.isAlive(e, now),
      qps_1m: e.qps,
      waiting: e.engine.waiting,
      saturated: e.saturated,
    });
    if (!since || since.version !== this.version || since.changes > this.changeSeq) {
      return { kind: 'full', cursor, instances: [...this.instances.values()].map((e) => ({ ...e.record, ...liveness(e) })).sort(byId) };
    }
    const ids = new Set([...this.changedAt].filter(([, seq]) => seq > since.changes).map(([id]) => id));
    // Alive when the cursor was taken, lapsed now: news even before a sweep records it.
    for (const e of this.instances.values()) if (e.watched && e.expiresAt >= since.at && e.expiresAt < at) ids.add(e.record.instance_id);
    if (ids.size === 0) return { kind: 'unchanged', cursor };
    const changed = [...ids].map((id) => this.instances.get(id)).filter((e): e is Entry => e !== undefined);
    return { kind: 'changes', cursor, changed: changed.map(liveness).sort(byId) };
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const now = this.now();
    const exclude = new Set(request.exclude ?? []);
    // The ticket moves and two randoms are drawn on every acquire, as the Redis store does, so both stay in step.
    const ticket = this.tickets.get(request.model) ?? 0;
    this.tickets.set(request.model, ticket + 1);
    const input = { ticket, rand1: this.random(), rand2: this.random() };
    const serving = [...this.instances.values()].filter((e) => e.record.models.includes(request.model));
    if (serving.length === 0) return { kind: 'unknown_model' };
    const candidates: Candidate[] = serving
      .filter((e) => !exclude.has(e.record.instance_id))
      .map((e) => ({
        instance_id: e.record.instance_id,
        inflight: e.inflight,
        qps_1m: e.qps,
        waiting: e.engine.waiting,
        saturated: e.saturated,
        weight: e.record.weight,
        max_inflight: e.record.max_inflight,
        is_alive: this.isAlive(e, now),
      }));
    const a = request.affinity;
    let affinity: 'hit' | 'gone' | undefined;
    let chosen: string | undefined;
    const bound = a ? this.affinity.get(a.key) : undefined;
    if (bound && bound.until >= now) {
      affinity = 'gone';
      const c = candidates.find((x) => x.instance_id === bound.id);
      if (c?.is_alive) {
        if (c.max_inflight === null || c.inflight < c.max_inflight) [chosen, affinity] = [c.instance_id, 'hit'];
        else if (a?.mode === 'hard') return { kind: 'all_full' };
      }
    }
    if (!chosen) {
      const outcome = pick(request.strategy, candidates, input);
      if (outcome.kind !== 'picked') return outcome;
      chosen = outcome.instance_id;
    }
    const entry = this.instances.get(chosen) as Entry;
    entry.inflight += 1;
    const contributions = this.leaseOf(request.proxyId, now).contributions;
    contributions.set(chosen, (contributions.get(chosen) ?? 0) + 1);
    if (a?.mode === 'soft') this.bind(a.key, chosen, now + a.ttlMs);
    const result: AcquireResult = { kind: 'acquired', instance_id: chosen, url: entry.record.url, inflight: entry.inflight };
    if (affinity) result.affinity = affinity;
    return result;
  }

  async release(proxyId: string, instanceId: string, bind?: AffinityBinding): Promise<number | null> {
    if (bind) this.bind(bind.key, instanceId, this.now() + bind.ttlMs);
    const contributions = this.leases.get(proxyId)?.contributions;
    const held = contributions?.get(instanceId) ?? 0;
    if (!contributions || held <= 0) return null;
    if (held === 1) contributions.delete(instanceId);
    else contributions.set(instanceId, held - 1);
    const entry = this.instances.get(instanceId);
    if (!entry) return null;
    entry.inflight = Math.max(0, entry.inflight - 1);
    return entry.inflight;
  }

  private bind(key: string, id: string, until: number): void {
    // Expired keys go in bulk now and then, as Redis expires them, so sessions cannot pile up.
    if (this.affinity.size >= 100_000) {
      const now = this.now();
      for (const [k, v] of this.affinity) if (v.until < now) this.affinity.delete(k);
    }
    this.affinity.set(key, { id, until });
  }

  async reconcile(proxyId: string, counts: Readonly<Record<string, number>>): Promise<void> {
    const lease = this.leaseOf(proxyId, this.now());
    const ids = new Set([...lease.contributions.keys(), ...Object.keys(counts)]);
    const next = new Map<string, number>();
    for (const id of ids) {
      const entry = this.instances.get(id);
      if (!entry) continue;
      const want = Math.max(0, Math.floor(counts[id] ?? 0));
      entry.inflight = Math.max(0, entry.inflight + want - (lease.contributions.get(id) ?? 0));
      if (want > 0) next.set(id, want);
    }
    lease.contributions = next;
  }

  async renewLease(info: ProxyInfo, ttl: number, stats?: Readonly<Record<string, InstanceStats>>): Promise<LeaseRenewal> {
    const now = this.now();
    const lease = this.leaseOf(info.proxy_id, now);
    lease.info = { ...info };
    // A copy, as a shared store keeps its own serialized one.
    if (stats) lease.stats = JSON.parse(JSON.stringify(stats)) as Record<string, InstanceStats>;
    lease.expiresAt = now + ttl;
    lease.lastSeen = now;
    lease.expiredSince = undefined;
    return { controlPlaneAlive: !this.controlPlane || this.controlPlane.until >= now };
  }

  async dropLease(proxyId: string): Promise<void> {
    const lease = this.leases.get(proxyId);
    if (!lease) return;
    this.subtract(lease);
    this.leases.delete(proxyId);
  }

  async reapExpiredLeases(): Promise<string[]> {
    const now = this.now();
    const reaped: string[] = [];
    for (const [proxyId, lease] of this.leases) {
      if (lease.expiresAt >= now) continue;
      if (lease.expiredSince === undefined) lease.expiredSince = now;
      else if (now - lease.expiredSince >= this.reapGraceMs) {
        this.subtract(lease);
        this.leases.delete(proxyId);
        reaped.push(proxyId);
      }
    }
    return reaped.sort();
  }

  async listProxies(): Promise<ProxyState[]> {
    return this.proxiesAt(this.now());
  }

  async fleet(): Promise<FleetState> {
    const now = this.now();
    const stats = sumInstanceStats([...this.leases.values()].filter((l) => l.expiresAt >= now).map((l) => l.stats));
    return { now, instances: this.instancesAt(now), proxies: this.proxiesAt(now), stats };
  }

  private marked = false;

  async ensureRegistryMarker(): Promise<'kept' | 'missing'> {
    if (this.marked) return 'kept';
    this.marked = true;
    return 'missing';
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}

  /** A proxy that acquires before its first renewal gets a lease that is already due, as in Redis. */
  private leaseOf(proxyId: string, now: number): Lease {
    let lease = this.leases.get(proxyId);
    if (!lease) {
      lease = {
        info: { proxy_id: proxyId, inflight_http: 0, queued: {}, draining: false, degraded: false },
        expiresAt: now,
        lastSeen: now,
        contributions: new Map(),
        stats: {},
      };
      this.leases.set(proxyId, lease);
    }
    return lease;
  }

  private instancesAt(now: number): InstanceState[] {
    return [...this.instances.values()].map((e) => this.toState(e, now)).sort(byId);
  }

  private proxiesAt(now: number): ProxyState[] {
    return [...this.leases.values()]
      .map((l) => ({ ...l.info, alive: l.expiresAt >= now, lease_expires_at: l.expiresAt, last_seen_at: l.lastSeen }))
      .sort((a, b) => (a.proxy_id < b.proxy_id ? -1 : 1));
  }

  private subtract(lease: Lease): void {
    for (const [id, n] of lease.contributions) {
      const entry = this.instances.get(id);
      if (entry) entry.inflight = Math.max(0, entry.inflight - n);
    }
    lease.contributions.clear();
  }

  private toState(entry: Entry, now: number): InstanceState {
    const byProxy: Record<string, number> = {};
    for (const [proxyId, lease] of this.leases) {
      const n = lease.contributions.get(entry.record.instance_id);
      if (n) byProxy[proxyId] = n;
    }
    return {
      ...entry.record,
      last_seen_at: entry.lastSeen,
      is_alive: this.isAlive(entry, now),
      load: { inflight: entry.inflight, qps_1m: entry.qps, gpu_util: entry.gpu },
      inflight_by_proxy: byProxy,
      engine: { ...entry.engine },
      saturated: entry.saturated,
    };
  }

  private changed(instanceId: string): void {
    this.changeSeq += 1;
    this.changedAt.set(instanceId, this.changeSeq);
  }

  /** Liveness is judged now while the control plane claims, and freezes at its watch (last claim + one renewal) when it stops. */
  private judgedAt(now: number): number {
    return this.controlPlane ? Math.min(now, this.controlPlane.watch) : now;
  }

  private isAlive(entry: Entry, now: number): boolean {
    return !entry.down && entry.expiresAt >= this.judgedAt(now);
  }
}

/** Whole milliseconds, as the Redis store keeps them. */
function ttlMs(ttlS: number): number {
  return Math.round(ttlS * 1000);
}

function byId<T extends { instance_id: string }>(a: T, b: T): number {
  return a.instance_id < b.instance_id ? -1 : a.instance_id > b.instance_id ? 1 : 0;
}
