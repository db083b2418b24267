import type { InstanceRecord } from './instance';

/** Event pattern for registry snapshots published by the control plane. */
export const REGISTRY_SNAPSHOT_EVENT = 'switchyard.registry.snapshot';

/**
 * A versioned full snapshot of the registry. Delivery is at-most-once, so a
 * consumer keeps the highest version it has seen and re-pulls on gaps.
 */
export interface RegistrySnapshot {
  version: number;
  generated_at: number;
  instances: InstanceRecord[];
}

/** The snapshot as published: records without api_key (publicRecord); `has_api_key` tells a proxy to pull the key from the store. */
export interface RegistrySnapshotEvent extends Omit<RegistrySnapshot, 'instances'> {
  instances: (Omit<InstanceRecord, 'api_key'> & { has_api_key?: boolean })[];
}
