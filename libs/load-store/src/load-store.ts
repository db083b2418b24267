import type { InstanceRecord, InstanceState, ProxyInfo, ProxyState, RegistrySnapshot } from '@switchyard/contracts';
import type { Strategy } from '@switchyard/routing';

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
}

export type AcquireResult =
  | { kind: 'acquired'; instance_id: string; url: string; inflight: number }
  | { kind: 'unknown_model' }
  | { kind: 'none_alive' }
  | { kind: 'all_full' };

/** Instances and proxy leases as they stood at one moment, `now`, on the store's clock. */
export interface FleetState {
  now: number;
  instances: InstanceState[];
  proxies: ProxyState[];
}

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
  /** Refreshes liveness and heartbeat metrics; false when the instance is unknown. Never touches in-flight. */
  heartbeat(instanceId: string, update: HeartbeatUpdate): Promise<boolean>;
  /** Removes an instance and every proxy's contribution to it; false when unknown. */
  remove(instanceId: string): Promise<boolean>;
  /** One instance, with the same fields listInstances() gives it; null when unknown. */
  getInstance(instanceId: string): Promise<InstanceState | null>;
  listInstances(): Promise<InstanceState[]>;
  snapshot(): Promise<RegistrySnapshot>;

  /** Selects an instance for the model and takes one in-flight slot on it, in one atomic step. */
  acquire(request: AcquireRequest): Promise<AcquireResult>;
  /** Gives back one slot this proxy holds on the instance; returns the new count, or null when it held none. */
  release(proxyId: string, instanceId: string): Promise<number | null>;
  /** Replaces this proxy's contributions with its local truth, adjusting the shared sums atomically. */
  reconcile(proxyId: string, counts: Readonly<Record<string, number>>): Promise<void>;

  /** Creates or extends a proxy's lease for ttlMs from now (store clock). */
  renewLease(info: ProxyInfo, ttlMs: number): Promise<void>;
  /** Ends a proxy's lease now, removing its contributions at once. */
  dropLease(proxyId: string): Promise<void>;
  /** Removes the contributions of every proxy whose lease has expired; returns their ids. */
  reapExpiredLeases(): Promise<string[]>;
  listProxies(): Promise<ProxyState[]>;
  /** Instances and proxies in one consistent read, so every contribution shown belongs to a proxy in the same list. */
  fleet(): Promise<FleetState>;

  /** Resolves when the store answers. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
