import Redis, { Cluster } from 'ioredis';
import { EngineSignals, InstanceRecord, InstanceState, InstanceStats, ModelInfo, ProxyInfo, ProxyState, RegistrySnapshot, sumInstanceStats } from '@switchyard/contracts';
import type {
  AcquireRequest,
  AcquireResult,
  AffinityBinding,
  BatchAnswer,
  BatchOp,
  FleetState,
  HeartbeatResult,
  HeartbeatUpdate,
  InstanceLiveness,
  LeaseRenewal,
  LoadStore,
  MarkDownResult,
  RegisterResult,
  RegistryCursor,
  RegistrySync,
} from './load-store';
import { connect, RedisLoadStore, RedisLoadStoreOptions } from './redis-load-store';

export const DEFAULT_POOL = 'default';

/** A registration that would put a model in a second pool; the control plane answers 409 naming both. */
export class PoolConflictError extends Error {
  constructor(
    readonly model: string,
    readonly existingPool: string,
    readonly requestedPool: string,
  ) {
    super(`model '${model}' is served in pool '${existingPool}'; an instance cannot serve it in pool '${requestedPool}' (a model lives in one pool)`);
  }
}

/**
 * Which pool each model and instance belongs to, in one hash slot of its own. ARGV: id, pool, models...
 * Returns {model, its pool} for the first model already in another pool (nothing written), else
 * {'', the instance's previous pool or ''} after recording them.
 */
const CLAIM_MODELS = `
local g, id, pool = 'sy:{switchyard}:', ARGV[1], ARGV[2]
for i = 3, #ARGV do
  local has = redis.call('HGET', g .. 'pools', ARGV[i])
  if has and has ~= pool then return { ARGV[i], has } end
end
for i = 3, #ARGV do redis.call('HSET', g .. 'pools', ARGV[i], pool) end
local before = redis.call('HGET', g .. 'where', id) or ''
redis.call('HSET', g .. 'where', id, pool)
redis.call('SADD', g .. 'poolset', pool)
return { '', before }
`;

type Client = (Redis | Cluster) & { syClaimModels(key: string, ...args: string[]): Promise<[string, string]> };

export type PooledLoadStoreOptions = Omit<RedisLoadStoreOptions, 'pool' | 'client' | 'capacityChannel'>;

/** Sub-cursors of every pool, folded into the one cursor the proxy keeps. */
interface PooledCursor extends RegistryCursor {
  pools: Record<string, RegistryCursor>;
}

/**
 * The store over several routing pools, each a RedisLoadStore on its own hash slot (on a Redis
 * Cluster, pools spread over the masters). A model lives in one pool; an instance in one pool.
 * Requests route to their model's pool from a local map (no extra round trip once known);
 * fleet-wide reads, sweeps, reaps and lease renewals visit every pool.
 */
export class PooledLoadStore implements LoadStore {
  readonly redis: Client;
  /** Every pool publishes freed capacity here, so a proxy hears all pools on one channel. */
  readonly capacityChannel = 'sy:{switchyard}:freed';
  private readonly stores = new Map<string, RedisLoadStore>();
  private readonly modelPool = new Map<string, string>();
  private readonly instancePool = new Map<string, string>();

  constructor(private readonly options: PooledLoadStoreOptions) {
    this.redis = connect(options) as Client;
    this.redis.on('error', () => undefined);
    this.redis.defineCommand('syClaimModels', { numberOfKeys: 1, lua: CLAIM_MODELS });
    this.stores.set(DEFAULT_POOL, this.poolStore(DEFAULT_POOL));
  }

  private poolStore(pool: string): RedisLoadStore {
    let store = this.stores.get(pool);
    if (!store) {
      store = new RedisLoadStore({ ...this.options, pool, client: this.redis, capacityChannel: this.capacityChannel });
      this.stores.set(pool, store);
    }
    return store;
  }

  /** Every pool anyone registered into, read fresh (a pool appears when its first instance registers). */
  private async allPools(): Promise<RedisLoadStore[]> {
    for (const pool of await this.redis.smembers('sy:{switchyard}:poolset')) this.poolStore(pool);
    return [...this.stores.values()];
  }

  private async poolOfInstance(instanceId: string): Promise<RedisLoadStore | null> {
    let pool = this.instancePool.get(instanceId);
    if (!pool) {
      pool = (await this.redis.hget('sy:{switchyard}:where', instanceId)) ?? undefined;
      if (!pool) return null;
      this.instancePool.set(instanceId, pool);
    }
    return this.poolStore(pool);
  }

  private async poolOfModel(model: string): Promise<RedisLoadStore | null> {
    let pool = this.modelPool.get(model);
    if (!pool) {
      pool = (await this.redis.hget('sy:{switchyard}:pools', model)) ?? undefined;
      if (!pool) return null;
      this.modelPool.set(model, pool);
    }
    return this.poolStore(pool);
  }

  async register(record: Omit<InstanceRecord, 'registered_at'>): Promise<RegisterResult> {
    const pool = record.pool ?? DEFAULT_POOL;
    const [conflict, other] = await this.redis.syClaimModels('sy:{switchyard}:pools', record.instance_id, pool, ...record.models);
    if (conflict) throw new PoolConflictError(conflict, other, pool);
    // Moving an instance to another pool takes it out of the old one, counts and all.
    if (other && other !== pool) await this.poolStore(other).remove(record.instance_id);
    this.instancePool.set(record.instance_id, pool);
    for (const m of record.models) this.modelPool.set(m, pool);
    return this.poolStore(pool).register(record);
  }

  async heartbeat(instanceId: string, update: HeartbeatUpdate): Promise<HeartbeatResult> {
    return (await this.poolOfInstance(instanceId))?.heartbeat(instanceId, update) ?? 'unknown';
  }

  async reportEngine(instanceId: string, signals: EngineSignals, saturated: boolean): Promise<boolean> {
    return (await this.poolOfInstance(instanceId))?.reportEngine(instanceId, signals, saturated) ?? false;
  }

  async updateModelInfo(record: Omit<InstanceRecord, 'registered_at'>, info: Record<string, ModelInfo>, at: number): Promise<boolean> {
    return (await this.poolOfInstance(record.instance_id))?.updateModelInfo(record, info, at) ?? false;
  }

  async markDown(instanceId: string): Promise<MarkDownResult> {
    return (await this.poolOfInstance(instanceId))?.markDown(instanceId) ?? 'unknown';
  }

  async sweepLiveness(): Promise<string[]> {
    return (await Promise.all((await this.allPools()).map((s) => s.sweepLiveness()))).flat().sort();
  }

  /** Leadership is won on the default pool; the leader then writes the same lease into every other pool, where liveness is judged. */
  async claimControlPlane(replicaId: string, ttlMs: number, renewMs: number): Promise<boolean> {
    if (!(await this.poolStore(DEFAULT_POOL).claimControlPlane(replicaId, ttlMs, renewMs))) return false;
    await Promise.all((await this.allPools()).filter((s) => s !== this.stores.get(DEFAULT_POOL)).map((s) => s.writeControlPlane(replicaId, ttlMs, renewMs)));
    return true;
  }

  async remove(instanceId: string): Promise<boolean> {
    const store = await this.poolOfInstance(instanceId);
    if (!store || !(await store.remove(instanceId))) return false;
    await this.redis.hdel('sy:{switchyard}:where', instanceId);
    this.instancePool.delete(instanceId);
    return true;
  }

  async getInstance(instanceId: string): Promise<InstanceState | null> {
    return (await this.poolOfInstance(instanceId))?.getInstance(instanceId) ?? null;
  }

  async listInstances(): Promise<InstanceState[]> {
    return (await this.fleet()).instances;
  }

  async snapshot(): Promise<RegistrySnapshot> {
    const parts = await Promise.all((await this.allPools()).map((s) => s.snapshot()));
    return {
      // Each pool's version only grows, so their sum does.
      version: parts.reduce((n, p) => n + p.version, 0),
      generated_at: Math.max(...parts.map((p) => p.generated_at)),
      instances: parts.flatMap((p) => p.instances).sort(byId),
    };
  }

  async syncRegistry(since: RegistryCursor | null): Promise<RegistrySync> {
    const stores = await this.allPools();
    const previous = (since as PooledCursor | null)?.pools ?? {};
    const pools = [...this.stores.keys()];
    let answers = await Promise.all(stores.map((s, i) => s.syncRegistry(previous[pools[i]] ?? null)));
    // One pool's registry changed: the proxy replaces its whole copy, so read every pool whole.
    if (answers.some((a) => a.kind === 'full') && answers.some((a) => a.kind !== 'full')) answers = await Promise.all(stores.map((s) => s.syncRegistry(null)));
    const cursor: PooledCursor = {
      version: answers.reduce((n, a) => n + a.cursor.version, 0),
      changes: answers.reduce((n, a) => n + a.cursor.changes, 0),
      at: Math.max(...answers.map((a) => a.cursor.at)),
      pools: Object.fromEntries(answers.map((a, i) => [pools[i], a.cursor])),
    };
    if (answers.every((a) => a.kind === 'unchanged')) return { kind: 'unchanged', cursor };
    if (answers[0].kind === 'full') {
      const instances = answers.flatMap((a) => (a.kind === 'full' ? a.instances : []));
      for (const i of instances) {
        const pool = i.pool ?? DEFAULT_POOL;
        this.instancePool.set(i.instance_id, pool);
        for (const m of i.models) this.modelPool.set(m, pool);
      }
      return { kind: 'full', cursor, instances: instances.sort(byId) };
    }
    const changed: InstanceLiveness[] = answers.flatMap((a) => (a.kind === 'changes' ? a.changed : []));
    return { kind: 'changes', cursor, changed: changed.sort(byId) };
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const store = await this.poolOfModel(request.model);
    if (!store) return { kind: 'unknown_model' };
    const r = await store.acquire(request);
    if (r.kind === 'acquired') this.instancePool.set(r.instance_id, this.modelPool.get(request.model) as string);
    return r;
  }

  /** Split by pool (one script call per pool touched, in parallel); each pool's ops keep their order. */
  async batch(proxyId: string, ops: readonly BatchOp[]): Promise<BatchAnswer[]> {
    const stores = await Promise.all(ops.map((op) => (op.kind === 'acquire' ? this.poolOfModel(op.request.model) : this.poolOfInstance(op.instanceId))));
    const answers: BatchAnswer[] = ops.map((op) => (op.kind === 'acquire' ? { kind: 'unknown_model' } : null));
    const groups = new Map<RedisLoadStore, number[]>();
    stores.forEach((store, i) => {
      if (!store) return;
      const group = groups.get(store);
      if (group) group.push(i);
      else groups.set(store, [i]);
    });
    await Promise.all(
      [...groups].map(async ([store, idx]) => {
        const got = await store.batch(proxyId, idx.map((i) => ops[i]));
        idx.forEach((i, k) => (answers[i] = got[k]));
      }),
    );
    ops.forEach((op, i) => {
      const a = answers[i];
      if (op.kind === 'acquire' && a !== null && typeof a === 'object' && a.kind === 'acquired') this.instancePool.set(a.instance_id, this.modelPool.get(op.request.model) as string);
    });
    return answers;
  }

  async release(proxyId: string, instanceId: string, bind?: AffinityBinding): Promise<number | null> {
    return (await this.poolOfInstance(instanceId))?.release(proxyId, instanceId, bind) ?? null;
  }

  /** Each pool gets this proxy's counts there, and an empty rewrite where it holds none now. */
  async reconcile(proxyId: string, counts: Readonly<Record<string, number>>): Promise<void> {
    const byPool = new Map<RedisLoadStore, Record<string, number>>();
    for (const store of await this.allPools()) byPool.set(store, {});
    for (const [id, n] of Object.entries(counts)) {
      const store = await this.poolOfInstance(id);
      if (store) (byPool.get(store) as Record<string, number>)[id] = n;
    }
    await Promise.all([...byPool].map(([store, c]) => store.reconcile(proxyId, c)));
  }

  /**
   * A lease in every pool, since each pool's reaper judges the contributions it holds. Each pool
   * gets the stats of its own instances (so they go with the lease there), and none where it has none.
   */
  async renewLease(info: ProxyInfo, ttlMs: number, stats?: Readonly<Record<string, InstanceStats>>): Promise<LeaseRenewal> {
    const stores = await this.allPools();
    const byPool = new Map<RedisLoadStore, Record<string, InstanceStats>>(stores.map((s) => [s, {}]));
    for (const [id, s] of Object.entries(stats ?? {})) {
      const store = await this.poolOfInstance(id);
      if (store) (byPool.get(store) as Record<string, InstanceStats>)[id] = s;
    }
    const answers = await Promise.all(stores.map((s) => s.renewLease(info, ttlMs, stats && byPool.get(s))));
    return { controlPlaneAlive: answers.every((a) => a.controlPlaneAlive) };
  }

  async dropLease(proxyId: string): Promise<void> {
    await Promise.all((await this.allPools()).map((s) => s.dropLease(proxyId)));
  }

  async reapExpiredLeases(): Promise<string[]> {
    const reaped = (await Promise.all((await this.allPools()).map((s) => s.reapExpiredLeases()))).flat();
    return [...new Set(reaped)].sort();
  }

  async listProxies(): Promise<ProxyState[]> {
    return (await this.fleet()).proxies;
  }

  /** One consistent read per pool (a pool is one slot; pools on different masters cannot be read in one step). */
  async fleet(): Promise<FleetState> {
    const parts = await Promise.all((await this.allPools()).map((s) => s.fleet()));
    const proxies = new Map<string, ProxyState>();
    for (const p of parts.flatMap((f) => f.proxies)) {
      const seen = proxies.get(p.proxy_id);
      if (!seen || p.lease_expires_at > seen.lease_expires_at) proxies.set(p.proxy_id, p);
    }
    return {
      now: Math.max(...parts.map((f) => f.now)),
      instances: parts.flatMap((f) => f.instances).sort(byId),
      proxies: [...proxies.values()].sort((a, b) => (a.proxy_id < b.proxy_id ? -1 : 1)),
      // An instance moved between pools may have counters in both for a while: they add up.
      stats: sumInstanceStats(parts.map((f) => f.stats)),
    };
  }

  /** 'missing' when any pool lost its marker: one master of a cluster can come back empty on its own. */
  async ensureRegistryMarker(): Promise<'kept' | 'missing'> {
    const marks = await Promise.all((await this.allPools()).map((s) => s.ensureRegistryMarker()));
    return marks.includes('missing') ? 'missing' : 'kept';
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}

function byId<T extends { instance_id: string }>(a: T, b: T): number {
  return a.instance_id < b.instance_id ? -1 : a.instance_id > b.instance_id ? 1 : 0;
}

/**
 * The shared store a server runs on: with `cluster` (REDIS_CLUSTER=true) the URL is a seed node of
 * a Redis Cluster and routing pools spread over its masters; otherwise one Redis and one pool.
 */
export function sharedStore(options: PooledLoadStoreOptions & { cluster: boolean }): LoadStore {
  return options.cluster ? new PooledLoadStore(options) : new RedisLoadStore(options);
}
