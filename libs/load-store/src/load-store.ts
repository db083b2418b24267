import type { EngineSignals, InstanceRecord, InstanceState, InstanceStats, ModelInfo, ProxyInfo, ProxyState, RegistrySnapshot } from '@switchyard/contracts';
import type { Strategy } from '@switchyard/routing';

/** How long a lease must stay expired, seen by two sweeps, before it is reaped: longer than a proxy's renewal interval (1 s) plus its command timeout. */
export const REAP_GRACE_MS = 2000;

export interface HeartbeatUpdate {
  qps_1m?: number;
  gpu_util?: number;
}

export interface AcquireRequest {
  proxyId: string;
  model: string;
  strategy: Strategy;
  /** Instances not to pick this time (already tried, cooling down). */
  exclude?: readonly string[];
  /** Stickiness: prefer the instance this key is bound to (see Affinity). */
  affinity?: Affinity;
}

/**
 * A request that should land where an earlier one did. `hard`: the state it needs lives there (a
 * previous_response_id): wait while that instance is full, pick as usual only when it cannot serve.
 * `soft` (a session): prefer it while it has room, and bind the key to whichever instance is taken.
 * Keys live ttlMs after their last binding, in the model's pool.
 */
export interface Affinity {
  key: string;
  mode: 'hard' | 'soft';
  ttlMs: number;
}

/** One call of a batch (see LoadStore.batch). */
export type BatchOp = { kind: 'acquire'; request: AcquireRequest } | { kind: 'release'; instanceId: string; bind?: AffinityBinding };
/** A batch op's answer: what acquire or release would have answered. */
export type BatchAnswer = AcquireResult | number | null;

/** Binds a key (a response id) to the instance released, for ttlMs. */
export interface AffinityBinding {
  key: string;
  ttlMs: number;
}

export type AcquireResult =
  /** affinity: 'hit' when the bound instance was taken, 'gone' when the key named one that cannot serve now. */
  | { kind: 'acquired'; instance_id: string; url: string; inflight: number; affinity?: 'hit' | 'gone' }
  | { kind: 'unknown_model' }
  | { kind: 'none_alive' }
  | { kind: 'all_full' };

/** Instances and proxy leases as they stood at one moment, `now`, on the store's clock. */
export interface FleetState {
  now: number;
  instances: InstanceState[];
  proxies: ProxyState[];
  /** Per instance, the request counters of every alive proxy summed (instances no alive proxy counted for are absent). */
  stats: Record<string, InstanceStats>;
}

/** What a heartbeat or successful probe found: 'revived' when the instance was not alive just before it. */
export type HeartbeatResult = 'unknown' | 'alive' | 'revived';

/** What markDown found: 'already_down' when the instance was not alive anyway (marked down or ttl lapsed). */
export type MarkDownResult = 'unknown' | 'was_alive' | 'already_down';

export interface LeaseRenewal {
  /**
   * A control plane holds its lease (claimControlPlane) on the store's clock. True too when no
   * control plane ever claimed one (a single process, or a control plane without leadership):
   * liveness is then judged at the store's clock as always, so there is nothing to warn about.
   */
  controlPlaneAlive: boolean;
}

/**
 * Where a proxy's copy of the registry stands: the registry version, the last liveness/engine change
 * it has seen, and the moment liveness was judged at (so ttls that lapsed since then are news even
 * before a sweep records them).
 */
export interface RegistryCursor {
  version: number;
  changes: number;
  at: number;
}

/** What routing needs of an instance beyond its record, as of the read. */
export interface InstanceLiveness {
  instance_id: string;
  is_alive: boolean;
  qps_1m: number | null;
  waiting: number | null;
  saturated: boolean;
}

/**
 * One registry sync: nothing when neither the registry nor any liveness or engine signal changed
 * since the cursor (one small read); the instances whose liveness or engine signals changed (or
 * whose ttl lapsed) when only those did; every record with its liveness when the registry itself
 * changed (or no cursor).
 */
export type RegistrySync =
  | { kind: 'unchanged'; cursor: RegistryCursor }
  | { kind: 'changes'; cursor: RegistryCursor; changed: InstanceLiveness[] }
  | { kind: 'full'; cursor: RegistryCursor; instances: (InstanceRecord & InstanceLiveness)[] };

export interface RegisterResult {
  created: boolean;
  state: InstanceState;
}

/**
 * The shared memory of the fleet: registry, liveness, per-instance in-flight
 * counts kept as the sum of per-proxy contributions, and proxy leases.
 * Every clock reading is the store's own (Redis TIME for Redis).
 */
export interface LoadStore {
  /** Where a shared store announces capacity freed by any proxy (absent for the in-process store, whose releases are all local). */
  readonly capacityChannel?: string;
  /** Adds or updates an instance; a new one starts at 0 in flight, an existing one keeps its count. */
  register(record: Omit<InstanceRecord, 'registered_at'>): Promise<RegisterResult>;
  /**
   * Refreshes liveness (a heartbeat or a successful probe) and heartbeat metrics; clears a markDown.
   * Never touches in-flight.
   */
  heartbeat(instanceId: string, update: HeartbeatUpdate): Promise<HeartbeatResult>;
  /**
   * Stores the engine's own load from a scrape. `saturated` (kv_cache_usage >= KV_CACHE_GUARD) is
   * the caller's decision; selection reads it and `waiting` as numbers, never as JSON.
   * False when the instance is unknown. Never touches in-flight or liveness.
   */
  reportEngine(instanceId: string, signals: EngineSignals, saturated: boolean): Promise<boolean>;
  /**
   * Stores what the engine's /v1/models says per model into the instance's record, only if the
   * record is still exactly `record` (as read): a registration or removal in between wins, and
   * nothing else (selection sets, counts, liveness) is touched. Bumps the registry version so
   * proxies re-read it. False when the record changed or is gone.
   */
  updateModelInfo(record: Omit<InstanceRecord, 'registered_at'>, info: Record<string, ModelInfo>, at: number): Promise<boolean>;
  /** Takes an instance out of selection at once (failed probes); the next heartbeat or successful probe revives it. */
  markDown(instanceId: string): Promise<MarkDownResult>;
  /** Ids whose ttl lapsed since the last sweep, each reported once (markDown ones are not: they were reported then). */
  sweepLiveness(): Promise<string[]>;
  /**
   * Leadership among control-plane replicas and the control plane's lease: true while this replica
   * holds it (claims it when free or lapsed, renews its own). The holder promises to claim again
   * within renewMs: past that, liveness is judged at that moment, so stopping every control plane
   * expires no one; a claim after a lapse moves every instance's expiry on by the gap, so no one
   * expires on return either.
   */
  claimControlPlane(replicaId: string, ttlMs: number, renewMs: number): Promise<boolean>;
  /** Removes an instance and every proxy's contribution to it; false when unknown. */
  remove(instanceId: string): Promise<boolean>;
  /** One instance, with the same fields listInstances() gives it; null when unknown. */
  getInstance(instanceId: string): Promise<InstanceState | null>;
  listInstances(): Promise<InstanceState[]>;
  snapshot(): Promise<RegistrySnapshot>;
  /** What changed since the cursor (null: everything); cost grows with what changed, never with proxies. */
  syncRegistry(since: RegistryCursor | null): Promise<RegistrySync>;

  /** Selects an instance for the model and takes one in-flight slot on it, in one atomic step. */
  acquire(request: AcquireRequest): Promise<AcquireResult>;
  /** Gives back one slot this proxy holds on the instance; returns the new count, or null when it held none. Binds `bind` to the instance first. */
  release(proxyId: string, instanceId: string, bind?: AffinityBinding): Promise<number | null>;
  /**
   * Releases and acquires of one proxy, in order, in one round trip (optional: a store without it
   * is called op by op). Each answer is what the op's own call would have answered.
   */
  batch?(proxyId: string, ops: readonly BatchOp[]): Promise<BatchAnswer[]>;
  /** Replaces this proxy's contributions with its local truth, adjusting the shared sums atomically. */
  reconcile(proxyId: string, counts: Readonly<Record<string, number>>): Promise<void>;

  /**
   * Creates or extends a proxy's lease for ttlMs from now (store clock); says in the same step whether a control plane holds its lease.
   * With `stats`, replaces the proxy's per-instance request counters in the same step (they go with its lease).
   */
  renewLease(info: ProxyInfo, ttlMs: number, stats?: Readonly<Record<string, InstanceStats>>): Promise<LeaseRenewal>;
  /** Ends a proxy's lease now, removing its contributions (and request counters) at once. */
  dropLease(proxyId: string): Promise<void>;
  /**
   * Removes the contributions of every proxy whose lease had expired at an earlier sweep at least
   * REAP_GRACE_MS ago and is still expired now (no renewal in between); returns their ids. A store
   * that hung longer than a lease (SIGSTOP) therefore never reaps on the first sweep it serves:
   * live proxies renew first.
   */
  reapExpiredLeases(): Promise<string[]>;
  listProxies(): Promise<ProxyState[]>;
  /** Instances and proxies in one consistent read, so every contribution shown belongs to a proxy in the same list. */
  fleet(): Promise<FleetState>;

  /**
   * Writes the registry marker if it is missing: 'missing' when the store is new or has lost its
   * data since (Redis restarted without persistence, failover to an empty replica), 'kept' otherwise.
   */
  ensureRegistryMarker(): Promise<'kept' | 'missing'>;

  /** Resolves when the store answers. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
