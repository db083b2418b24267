import Redis, { Cluster, RedisOptions } from 'ioredis';
import { EngineSignals, InstanceRecord, InstanceState, InstanceStats, ModelInfo, ProxyInfo, ProxyState, recordOf, RegistrySnapshot, sumInstanceStats, UNKNOWN_ENGINE } from '@switchyard/contracts';
import {
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
  REAP_GRACE_MS,
  RegisterResult,
  RegistryCursor,
  RegistrySync,
} from './load-store';
import * as scripts from './redis-scripts';

export interface RedisLoadStoreOptions {
  url: string;
  /** Routing pool; every key carries it as the hash tag, so a pool is one hash slot of a Redis Cluster. */
  pool?: string;
  /** url is a seed node of a Redis Cluster (ioredis Cluster); every script runs on the node serving the pool's slot. */
  cluster?: boolean;
  /** A connection to share (several pools on one client); url and the connection options are then unused. */
  client?: Redis | Cluster;
  /** Where releases that free capacity publish; `sy:{pool}:freed` unless given (a pooled store gives one for every pool). */
  capacityChannel?: string;
  /** Per-command timeout: short on the request path, long on the control plane. */
  commandTimeoutMs?: number;
  /** Queue commands while disconnected (control plane) or fail at once (proxies, which then route locally). */
  offlineQueue?: boolean;
  connectionName?: string;
  /** Send the commands issued in one tick as one write (the proxy's hot path: acquires and releases of many requests). */
  autoPipelining?: boolean;
  random?: () => number;
  /** See REAP_GRACE_MS. */
  reapGraceMs?: number;
}

type ScriptName =
  | 'syRegister'
  | 'syHeartbeat'
  | 'syReportEngine'
  | 'syMarkDown'
  | 'syUpdateRecord'
  | 'sySweepLiveness'
  | 'syClaimControlPlane'
  | 'syRemove'
  | 'syAcquire'
  | 'syRelease'
  | 'syBatch'
  | 'syReconcile'
  | 'syRenewLease'
  | 'syDropLease'
  | 'syReap'
  | 'syDump'
  | 'sySync'
  | 'syInstance'
  | 'syEnsureMarker';
type ScriptFn = (key: string, ...args: (string | number)[]) => Promise<unknown>;

const SCRIPTS: Record<ScriptName, string> = {
  syRegister: scripts.REGISTER,
  syHeartbeat: scripts.HEARTBEAT,
  syReportEngine: scripts.REPORT_ENGINE,
  syMarkDown: scripts.MARK_DOWN,
  syUpdateRecord: scripts.UPDATE_RECORD,
  sySweepLiveness: scripts.SWEEP_LIVENESS,
  syClaimControlPlane: scripts.CLAIM_CONTROL_PLANE,
  syRemove: scripts.REMOVE,
  syAcquire: scripts.ACQUIRE,
  syRelease: scripts.RELEASE,
  syBatch: scripts.BATCH,
  syReconcile: scripts.RECONCILE,
  syRenewLease: scripts.RENEW_LEASE,
  syDropLease: scripts.DROP_LEASE,
  syReap: scripts.REAP,
  syDump: scripts.DUMP,
  sySync: scripts.SYNC,
  syEnsureMarker: scripts.ENSURE_MARKER,
  syInstance: scripts.INSTANCE,
};

/** One instance's fields as the scripts read them; null or undefined where its hash has no entry. */
type Field = string | null | undefined;
type Fields = Record<(typeof scripts.INSTANCE_FIELDS)[number], Field>;

/** When liveness is judged: now, or the control plane's watch when it has stopped claiming (see JUDGED_AT in the scripts). */
function judgedAt(now: number, cpWatch: Field): number {
  return Math.min(now, cpWatch == null ? Infinity : Number(cpWatch));
}

function toInstanceState(rec: string, f: Fields, byProxy: Record<string, number>, now: number, cpWatch: Field): InstanceState {
  const record = JSON.parse(rec) as Omit<InstanceRecord, 'registered_at'>;
  return {
    ...record,
    registered_at: Number(f.reg),
    last_seen_at: Number(f.seen),
    is_alive: f.down == null && f.exp != null && Number(f.exp) >= judgedAt(now, cpWatch),
    load: {
      inflight: Number(f.inflight ?? 0),
      qps_1m: f.qps == null ? null : Number(f.qps),
      gpu_util: f.gpu == null ? null : Number(f.gpu),
    },
    inflight_by_proxy: byProxy,
    engine: f.eng == null ? { ...UNKNOWN_ENGINE } : (JSON.parse(f.eng) as EngineSignals),
    saturated: f.sat != null,
  };
}

/** ACQUIRE's reply: {1, id, url, inflight, affinity} or {code}. */
type AcquireReply = [number, string?, string?, number?, string?];

function acquireAnswer(r: AcquireReply): AcquireResult {
  switch (r[0]) {
    case 1: {
      const acquired: AcquireResult = { kind: 'acquired', instance_id: r[1] as string, url: r[2] as string, inflight: r[3] as number };
      if (r[4]) acquired.affinity = r[4] as 'hit' | 'gone';
      return acquired;
    }
    case 0:
      return { kind: 'unknown_model' };
    case -1:
      return { kind: 'none_alive' };
    default:
      return { kind: 'all_full' };
  }
}

/** A connection as the options ask: one node, or a Redis Cluster from a seed node. */
export function connect(options: Pick<RedisLoadStoreOptions, 'url' | 'cluster' | 'commandTimeoutMs' | 'offlineQueue' | 'connectionName' | 'autoPipelining'>): Redis | Cluster {
  const redisOptions: RedisOptions = {
    commandTimeout: options.commandTimeoutMs ?? 2000,
    enableOfflineQueue: options.offlineQueue ?? true,
    maxRetriesPerRequest: options.offlineQueue === false ? 0 : 2,
    connectionName: options.connectionName,
    lazyConnect: false,
    retryStrategy: (attempt) => Math.min(50 * attempt, 1000),
    enableAutoPipelining: options.autoPipelining ?? false,
  };
  if (!options.cluster) return new Redis(options.url, redisOptions);
  const seed = new URL(options.url);
  return new Redis.Cluster([{ host: seed.hostname, port: Number(seed.port || 6379) }], {
    redisOptions: { ...redisOptions, username: seed.username || undefined, password: seed.password || undefined },
    enableOfflineQueue: redisOptions.enableOfflineQueue,
    enableAutoPipelining: redisOptions.enableAutoPipelining,
    clusterRetryStrategy: (attempt) => Math.min(50 * attempt, 1000),
  });
}

/** A proxy's stats as it wrote them; anything unreadable counts as none rather than failing the whole read. */
function parseStats(json: string): Record<string, InstanceStats> {
  try {
    const v: unknown = JSON.parse(json);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, InstanceStats>) : {};
  } catch {
    return {};
  }
}

const DEFAULT_INFO = (proxyId: string): ProxyInfo => ({ proxy_id: proxyId, inflight_http: 0, queued: {}, draining: false, degraded: false });

/** The shared store: ioredis with one Lua script per state change, so each change is atomic and one round trip. */
export class RedisLoadStore implements LoadStore {
  readonly redis: Redis | Cluster;
  private readonly prefix: string;
  private readonly routingKey: string;
  /** Pub/sub channel on which a release that takes an instance below max_inflight publishes its id. */
  readonly capacityChannel: string;
  private readonly random: () => number;
  private readonly reapGraceMs: number;

  constructor(options: RedisLoadStoreOptions) {
    this.redis = options.client ?? connect(options);
    // Connection errors are surfaced through command failures and ping(); do not crash on the 'error' event.
    this.redis.on('error', () => undefined);
    this.prefix = `sy:{${options.pool ?? 'default'}}:`;
    this.routingKey = `${this.prefix}rec`;
    this.capacityChannel = options.capacityChannel ?? `${this.prefix}freed`;
    this.random = options.random ?? Math.random;
    this.reapGraceMs = options.reapGraceMs ?? REAP_GRACE_MS;
    for (const [name, lua] of Object.entries(SCRIPTS)) {
      this.redis.defineCommand(name, { numberOfKeys: 1, lua });
    }
  }

  private run(name: ScriptName, ...args: (string | number)[]): Promise<unknown> {
    const fn = (this.redis as unknown as Record<ScriptName, ScriptFn>)[name];
    return fn.call(this.redis, this.routingKey, this.prefix, ...args);
  }

  async register(record: Omit<InstanceRecord, 'registered_at'>): Promise<RegisterResult> {
    const created = await this.run(
      'syRegister',
      record.instance_id,
      JSON.stringify(record),
      record.url,
      record.weight,
      record.max_inflight ?? '',
      Math.round(record.ttl_s * 1000),
      JSON.stringify(record.models),
    );
    const state = await this.getInstance(record.instance_id);
    if (!state) throw new Error(`instance ${record.instance_id} vanished right after registration`);
    return { created: created === 1, state };
  }

  async heartbeat(instanceId: string, update: HeartbeatUpdate): Promise<HeartbeatResult> {
    const r = await this.run('syHeartbeat', instanceId, update.qps_1m ?? '', update.gpu_util ?? '');
    return r === 0 ? 'unknown' : r === 1 ? 'alive' : 'revived';
  }

  async reportEngine(instanceId: string, signals: EngineSignals, saturated: boolean): Promise<boolean> {
    const waiting = signals.waiting !== null && Number.isFinite(signals.waiting) ? signals.waiting : '';
    return (await this.run('syReportEngine', instanceId, JSON.stringify(signals), waiting, saturated ? 1 : 0)) === 1;
  }

  async markDown(instanceId: string): Promise<MarkDownResult> {
    const r = await this.run('syMarkDown', instanceId);
    return r === 0 ? 'unknown' : r === 1 ? 'was_alive' : 'already_down';
  }

  async sweepLiveness(): Promise<string[]> {
    return ((await this.run('sySweepLiveness')) as string[]).sort();
  }

  async claimControlPlane(replicaId: string, ttlMs: number, renewMs: number): Promise<boolean> {
    return (await this.run('syClaimControlPlane', replicaId, Math.round(ttlMs), Math.round(renewMs), 0)) === 1;
  }

  /** Writes the control plane's lease whoever holds it: a pooled store's leader mirrors its claim into every pool. */
  async writeControlPlane(replicaId: string, ttlMs: number, renewMs: number): Promise<void> {
    await this.run('syClaimControlPlane', replicaId, Math.round(ttlMs), Math.round(renewMs), 1);
  }

  async updateModelInfo(record: Omit<InstanceRecord, 'registered_at'>, info: Record<string, ModelInfo>, at: number): Promise<boolean> {
    // The record is stored as JSON.stringify gave it, and a parse-stringify round trip gives the same text back.
    const next = { ...record, model_info: info, model_info_at: at };
    return (await this.run('syUpdateRecord', record.instance_id, JSON.stringify(record), JSON.stringify(next))) === 1;
  }

  async remove(instanceId: string): Promise<boolean> {
    return (await this.run('syRemove', instanceId)) === 1;
  }

  async getInstance(instanceId: string): Promise<InstanceState | null> {
    const raw = (await this.run('syInstance', instanceId)) as [number, Field, string, ...unknown[]] | null;
    if (!raw) return null;
    const [now, cpWatch, rec] = raw;
    const values = raw.slice(3) as Field[];
    const f = Object.fromEntries(scripts.INSTANCE_FIELDS.map((name, i) => [name, values[i]])) as Fields;
    const flat = raw[3 + scripts.INSTANCE_FIELDS.length] as string[];
    const byProxy: Record<string, number> = {};
    for (let i = 0; i < flat.length; i += 2) byProxy[flat[i]] = Number(flat[i + 1]);
    return toInstanceState(rec, f, byProxy, now, cpWatch);
  }

  async listInstances(): Promise<InstanceState[]> {
    return (await this.dump()).instances;
  }

  async snapshot(): Promise<RegistrySnapshot> {
    const d = await this.dump();
    return {
      version: d.version,
      generated_at: d.now,
      instances: d.instances.map(recordOf),
    };
  }

  async syncRegistry(since: RegistryCursor | null): Promise<RegistrySync> {
    const raw = (await this.run('sySync', since?.version ?? -1, since?.changes ?? -1, since?.at ?? -1)) as [[number, Field, number, number], string[]?, ...Field[][]];
    const [[now, cpUntil, version, changes], ids = []] = raw;
    const at = judgedAt(now, cpUntil);
    const cursor = { version, changes, at };
    if (raw.length === 1) return { kind: 'unchanged', cursor };
    const full = since === null || since.version !== version || since.changes > changes;
    const columns = raw.slice(full ? 4 : 2) as Field[][];
    const liveness = ids.map((instance_id, i): InstanceLiveness => {
      const [exp, down, qps, wait, sat] = scripts.SYNC_FIELDS.map((_, k) => columns[k][i]);
      return {
        instance_id,
        is_alive: down == null && exp != null && Number(exp) >= at,
        qps_1m: qps == null ? null : Number(qps),
        waiting: wait == null ? null : Number(wait),
        saturated: sat != null,
      };
    });
    const byId = (a: { instance_id: string }, b: { instance_id: string }) => (a.instance_id < b.instance_id ? -1 : a.instance_id > b.instance_id ? 1 : 0);
    if (!full) return { kind: 'changes', cursor, changed: liveness.sort(byId) };
    const [recs, regs] = [raw[2], raw[3]] as Field[][];
    const instances = liveness
      .map((l, i) => ({ ...(JSON.parse(recs[i] as string) as Omit<InstanceRecord, 'registered_at'>), registered_at: Number(regs[i]), ...l }))
      .sort(byId);
    return { kind: 'full', cursor, instances };
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const r = (await this.run(
      'syAcquire',
      request.model,
      request.strategy,
      request.proxyId,
      this.random(),
      this.random(),
      request.affinity?.key ?? '',
      request.affinity?.mode ?? '',
      request.affinity?.ttlMs ?? 0,
      ...(request.exclude ?? []),
    )) as AcquireReply;
    return acquireAnswer(r);
  }

  async batch(proxyId: string, ops: readonly BatchOp[]): Promise<BatchAnswer[]> {
    // The short acquire form takes the strategy of the batch's first acquire (a proxy has one).
    const first = ops.find((op) => op.kind === 'acquire');
    const strategy = first?.kind === 'acquire' ? first.request.strategy : 'least_load';
    const draws = strategy === 'random' || strategy === 'power_of_two';
    const args: (string | number)[] = [proxyId, this.capacityChannel, strategy];
    for (const op of ops) {
      if (op.kind === 'release') {
        if (op.bind) args.push('R', op.instanceId, op.bind.key, op.bind.ttlMs);
        else args.push('r', op.instanceId);
        continue;
      }
      const { request: r } = op;
      // Two draws per acquire whatever the form, as acquire() draws, so injected randomness stays in step.
      const rand1 = this.random();
      const rand2 = this.random();
      const exclude = r.exclude ?? [];
      if (r.strategy === strategy && !r.affinity && exclude.length === 0) {
        if (draws) args.push('a', r.model, rand1, rand2);
        else args.push('a', r.model);
      } else args.push('A', r.model, r.strategy, rand1, rand2, r.affinity?.key ?? '', r.affinity?.mode ?? '', r.affinity?.ttlMs ?? 0, exclude.length, ...exclude);
    }
    const answers = (await this.run('syBatch', ...args)) as (number | AcquireReply)[];
    return answers.map((a, i) => (ops[i].kind === 'release' ? ((a as number) < 0 ? null : (a as number)) : acquireAnswer(a as AcquireReply)));
  }

  async release(proxyId: string, instanceId: string, bind?: AffinityBinding): Promise<number | null> {
    const n = (await (bind ? this.run('syRelease', proxyId, instanceId, this.capacityChannel, bind.key, bind.ttlMs) : this.run('syRelease', proxyId, instanceId, this.capacityChannel))) as number;
    return n < 0 ? null : n;
  }

  async reconcile(proxyId: string, counts: Readonly<Record<string, number>>): Promise<void> {
    // An empty object must reach Lua as a JSON object, which cjson decodes to an empty table either way.
    await this.run('syReconcile', proxyId, JSON.stringify(counts));
  }

  async renewLease(info: ProxyInfo, ttlMs: number, stats?: Readonly<Record<string, InstanceStats>>): Promise<LeaseRenewal> {
    const r = await this.run('syRenewLease', info.proxy_id, Math.round(ttlMs), JSON.stringify(info), ...(stats ? [JSON.stringify(stats)] : []));
    return { controlPlaneAlive: r === 1 };
  }

  async dropLease(proxyId: string): Promise<void> {
    await this.run('syDropLease', proxyId);
  }

  async reapExpiredLeases(): Promise<string[]> {
    return ((await this.run('syReap', this.reapGraceMs)) as string[]).sort();
  }

  async listProxies(): Promise<ProxyState[]> {
    return (await this.dump()).proxies;
  }

  async fleet(): Promise<FleetState> {
    const { now, instances, proxies, stats } = await this.dump();
    return { now, instances, proxies, stats };
  }

  async ensureRegistryMarker(): Promise<'kept' | 'missing'> {
    return (await this.run('syEnsureMarker')) === 1 ? 'missing' : 'kept';
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }

  private async dump(): Promise<{ now: number; version: number; instances: InstanceState[]; proxies: ProxyState[]; stats: Record<string, InstanceStats> }> {
    const raw = (await this.run('syDump')) as unknown[];
    const [now, version, cpWatch, rec] = raw as [number, number, Field, string[]];
    const hash = (flat: string[]) => {
      const m = new Map<string, string>();
      for (let i = 0; i < flat.length; i += 2) m.set(flat[i], flat[i + 1]);
      return m;
    };
    const nf = scripts.INSTANCE_FIELDS.length;
    const fieldMaps = (raw.slice(4, 4 + nf) as string[][]).map(hash);
    const [leases, leaseInfo, leaseSeen, statsFlat] = raw.slice(4 + nf, 8 + nf) as string[][];
    const [infoM, leaseSeenM, statsM] = [leaseInfo, leaseSeen, statsFlat].map(hash);
    const byInstance = new Map<string, Record<string, number>>();
    for (const entry of raw.slice(8 + nf) as [string, string[]][]) {
      const [proxyId, flat] = entry;
      for (let i = 0; i < flat.length; i += 2) {
        // A release leaves a contribution that reaches 0 in place (see RELEASE).
        if (Number(flat[i + 1]) <= 0) continue;
        const map = byInstance.get(flat[i]) ?? {};
        map[proxyId] = Number(flat[i + 1]);
        byInstance.set(flat[i], map);
      }
    }
    const instances: InstanceState[] = [];
    for (let i = 0; i < rec.length; i += 2) {
      const id = rec[i];
      const f = Object.fromEntries(scripts.INSTANCE_FIELDS.map((name, k) => [name, fieldMaps[k].get(id)])) as Fields;
      instances.push(toInstanceState(rec[i + 1], f, byInstance.get(id) ?? {}, now, cpWatch));
    }
    instances.sort((a, b) => (a.instance_id < b.instance_id ? -1 : a.instance_id > b.instance_id ? 1 : 0));
    const proxies: ProxyState[] = [];
    for (let i = 0; i < leases.length; i += 2) {
      const proxyId = leases[i];
      const expiresAt = Number(leases[i + 1]);
      const info = infoM.get(proxyId);
      proxies.push({
        ...(info ? (JSON.parse(info) as ProxyInfo) : DEFAULT_INFO(proxyId)),
        proxy_id: proxyId,
        alive: expiresAt >= now,
        lease_expires_at: expiresAt,
        last_seen_at: Number(leaseSeenM.get(proxyId) ?? expiresAt),
      });
    }
    proxies.sort((a, b) => (a.proxy_id < b.proxy_id ? -1 : 1));
    const stats = sumInstanceStats(proxies.filter((p) => p.alive && statsM.has(p.proxy_id)).map((p) => parseStats(statsM.get(p.proxy_id) as string)));
    return { now, version, instances, proxies, stats };
  }
}
