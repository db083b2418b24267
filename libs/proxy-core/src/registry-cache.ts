import type { RegistrySnapshot } from '@switchyard/contracts';
import type { InstanceLiveness, LoadStore, RegistryCursor } from '@switchyard/load-store';
import type { Candidate } from '@switchyard/routing';

/** What the proxy remembers of an instance between pulls. */
export interface CachedInstance {
  instance_id: string;
  url: string;
  models: string[];
  weight: number;
  max_inflight: number | null;
  is_alive: boolean;
  qps_1m: number | null;
  waiting: number | null;
  saturated: boolean;
}

/**
 * The proxy's local copy of the registry: pulled from the store on start, on
 * reconnect and on a timer, and patched by the control plane's snapshot events
 * in between. It serves /v1/models and routing while the store is unreachable.
 * A pull reads only what changed since the last one (see LoadStore.syncRegistry):
 * one small read when nothing did.
 */
export class RegistryCache {
  private instances = new Map<string, CachedInstance>();
  private byModel = new Map<string, CachedInstance[]>();
  private eventVersion = -1;
  private cursor: RegistryCursor | null = null;
  /** Store clock of the last successful pull; 0 before the first. */
  pulledAt = 0;

  constructor(private readonly store: LoadStore) {}

  get size(): number {
    return this.instances.size;
  }

  get loaded(): boolean {
    return this.pulledAt > 0 || this.eventVersion >= 0;
  }

  async pull(): Promise<void> {
    const sync = await this.store.syncRegistry(this.cursor);
    if (sync.kind === 'full') {
      this.replace(sync.instances.map((i) => ({ instance_id: i.instance_id, url: i.url, models: i.models, weight: i.weight, max_inflight: i.max_inflight, ...liveness(i) })));
    } else if (sync.kind === 'changes') {
      for (const c of sync.changed) {
        const known = this.instances.get(c.instance_id);
        if (known) Object.assign(known, liveness(c));
      }
    }
    this.cursor = sync.cursor;
    this.pulledAt = Date.now();
  }

  /** Applies a snapshot event; stale or replayed versions are ignored. Liveness of known instances is kept until the next pull. */
  applySnapshot(snapshot: RegistrySnapshot): boolean {
    if (snapshot.version <= this.eventVersion) return false;
    this.eventVersion = snapshot.version;
    this.replace(
      snapshot.instances.map((r) => {
        const known = this.instances.get(r.instance_id);
        return { instance_id: r.instance_id, url: r.url, models: r.models, weight: r.weight, max_inflight: r.max_inflight, is_alive: known?.is_alive ?? true, qps_1m: known?.qps_1m ?? null, waiting: known?.waiting ?? null, saturated: known?.saturated ?? false };
      }),
    );
    return true;
  }

  /** Models served by at least one alive instance, sorted. */
  models(): string[] {
    const out: string[] = [];
    for (const [model, list] of this.byModel) if (list.some((i) => i.is_alive)) out.push(model);
    return out.sort();
  }

  hasModel(model: string): boolean {
    return this.byModel.has(model);
  }

  get(instanceId: string): CachedInstance | undefined {
    return this.instances.get(instanceId);
  }

  /** Candidates for a model as this proxy alone knows them: its own in-flight counts stand in for the shared ones. */
  candidates(model: string, localInflight: ReadonlyMap<string, number>, exclude: readonly string[]): Candidate[] {
    return (this.byModel.get(model) ?? [])
      .filter((i) => !exclude.includes(i.instance_id))
      .map((i) => ({
        instance_id: i.instance_id,
        inflight: localInflight.get(i.instance_id) ?? 0,
        qps_1m: i.qps_1m,
        waiting: i.waiting,
        saturated: i.saturated,
        weight: i.weight,
        max_inflight: i.max_inflight,
        is_alive: i.is_alive,
      }));
  }

  private replace(list: CachedInstance[]): void {
    this.instances = new Map(list.map((i) => [i.instance_id, i]));
    this.byModel = new Map();
    for (const i of list) {
      for (const m of i.models) {
        const arr = this.byModel.get(m);
        if (arr) arr.push(i);
        else this.byModel.set(m, [i]);
      }
    }
  }
}

function liveness(l: InstanceLiveness): Pick<CachedInstance, 'is_alive' | 'qps_1m' | 'waiting' | 'saturated'> {
  return { is_alive: l.is_alive, qps_1m: l.qps_1m, waiting: l.waiting, saturated: l.saturated };
}
