import { DEFAULT_ENDPOINTS, InstanceRecord, ModelInfo, RegistrySnapshotEvent } from '@switchyard/contracts';
import type { InstanceLiveness, LoadStore, RegistryCursor } from '@switchyard/load-store';
import type { Candidate } from '@switchyard/routing';
import { FORWARDED_ROUTES } from './routes';

/** What the proxy remembers of an instance between pulls. */
export interface CachedInstance {
  instance_id: string;
  url: string;
  models: string[];
  weight: number;
  max_inflight: number | null;
  endpoints: string[];
  /** `Bearer <api_key>` when the instance has its own key: the Authorization it gets, whatever the client sent. */
  authorization?: string;
  model_info?: Record<string, ModelInfo>;
  is_alive: boolean;
  qps_1m: number | null;
  waiting: number | null;
  saturated: boolean;
}

/** Per (model, route): the instances of the model that do not list the route; `none` when no instance does. */
export interface RouteExclusion {
  exclude: readonly string[];
  none: boolean;
}

/** What a proxy shows of a model at /v1/models: the smallest context any instance reports, the first owner named. */
export type ModelSummary = ModelInfo;

type Fields = Pick<CachedInstance, 'instance_id' | 'url' | 'models' | 'weight' | 'max_inflight' | 'endpoints' | 'authorization' | 'model_info'>;

function fieldsOf(r: Omit<InstanceRecord, 'registered_at' | 'api_key'> & { api_key?: string }): Fields {
  return {
    instance_id: r.instance_id,
    url: r.url,
    models: r.models,
    weight: r.weight,
    max_inflight: r.max_inflight,
    // Records always carry endpoints since registration defaults them; an empty or missing list (older records, fixtures) means the defaults.
    endpoints: r.endpoints?.length ? r.endpoints : [...DEFAULT_ENDPOINTS],
    ...(r.api_key ? { authorization: `Bearer ${r.api_key}` } : {}),
    ...(r.model_info ? { model_info: r.model_info } : {}),
  };
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
  /** Only (model, route) pairs some instance of the model does not serve; computed per registry change, so a request does one lookup. */
  private exclusions = new Map<string, Map<string, RouteExclusion>>();
  private summaries = new Map<string, ModelSummary>();
  /** A snapshot event named instances with keys this cache does not hold: pull the store before trusting it. */
  keysMissing = false;
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
      this.replace(sync.instances.map((i) => ({ ...fieldsOf(i), ...liveness(i) })));
      this.keysMissing = false;
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
  applySnapshot(snapshot: RegistrySnapshotEvent): boolean {
    if (snapshot.version <= this.eventVersion) return false;
    this.eventVersion = snapshot.version;
    this.replace(
      snapshot.instances.map((r) => {
        const known = this.instances.get(r.instance_id);
        // Events never carry keys: a key stays as the last pull read it (a pull follows when one is missing).
        const authorization = r.has_api_key ? known?.authorization : undefined;
        if (r.has_api_key && !authorization) this.keysMissing = true;
        return { ...fieldsOf(r), ...(authorization ? { authorization } : {}), is_alive: known?.is_alive ?? true, qps_1m: known?.qps_1m ?? null, waiting: known?.waiting ?? null, saturated: known?.saturated ?? false };
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

  /** What engines report of an alive model (null fields when none says); undefined when no alive instance serves it. */
  modelSummary(model: string): ModelSummary | undefined {
    if (!this.byModel.get(model)?.some((i) => i.is_alive)) return undefined;
    return this.summaries.get(model) ?? { max_model_len: null, owned_by: null };
  }

  /** Instances of the model that must not get this route; undefined when every instance serves it. */
  routeExclusion(model: string, route: string): RouteExclusion | undefined {
    return this.exclusions.get(model)?.get(route);
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
    this.exclusions = new Map();
    this.summaries = new Map();
    for (const [model, list] of this.byModel) {
      const perRoute = new Map<string, RouteExclusion>();
      for (const route of FORWARDED_ROUTES) {
        const exclude = list.filter((i) => !i.endpoints.includes(route)).map((i) => i.instance_id);
        if (exclude.length) perRoute.set(route, { exclude, none: exclude.length === list.length });
      }
      if (perRoute.size) this.exclusions.set(model, perRoute);
      this.summaries.set(model, summarize(model, list));
    }
  }
}

/** When instances disagree: the smallest max_model_len (what every one of them can take), the first owner reported. */
function summarize(model: string, list: readonly CachedInstance[]): ModelSummary {
  let max: number | null = null;
  let owner: string | null = null;
  for (const i of list) {
    const info = i.model_info && Object.hasOwn(i.model_info, model) ? i.model_info[model] : undefined;
    if (!info) continue;
    if (typeof info.max_model_len === 'number' && (max === null || info.max_model_len < max)) max = info.max_model_len;
    if (owner === null && typeof info.owned_by === 'string') owner = info.owned_by;
  }
  return { max_model_len: max, owned_by: owner };
}

function liveness(l: InstanceLiveness): Pick<CachedInstance, 'is_alive' | 'qps_1m' | 'waiting' | 'saturated'> {
  return { is_alive: l.is_alive, qps_1m: l.qps_1m, waiting: l.waiting, saturated: l.saturated };
}
