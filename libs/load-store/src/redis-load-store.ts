import Redis, { RedisOptions } from 'ioredis';
import type { InstanceRecord, InstanceState, ProxyInfo, ProxyState, RegistrySnapshot } from '@switchyard/contracts';
import type { AcquireRequest, AcquireResult, FleetState, HeartbeatUpdate, LoadStore, RegisterResult } from './load-store';
import * as scripts from './redis-scripts';

export interface RedisLoadStoreOptions {
  url: string;
  /** Routing pool; every key carries it as the hash tag. */
  pool?: string;
  /** Per-command timeout: short on the request path, long on the control plane. */
  commandTimeoutMs?: number;
  /** Queue commands while disconnected (control plane) or fail at once (proxies, which then route locally). */
  offlineQueue?: boolean;
  connectionName?: string;
  /** Send the commands issued in one tick as one write (the proxy's hot path: acquires and releases of many requests). */
  autoPipelining?: boolean;
  random?: () => number;
}

type ScriptName = 'syRegister' | 'syHeartbeat' | 'syRemove' | 'syAcquire' | 'syRelease' | 'syReconcile' | 'syRenewLease' | 'syDropLease' | 'syReap' | 'syDump' | 'syInstance';
type ScriptFn = (key: string, ...args: (string | number)[]) => Promise<unknown>;

const SCRIPTS: Record<ScriptName, string> = {
  syRegister: scripts.REGISTER,
  syHeartbeat: scripts.HEARTBEAT,
  syRemove: scripts.REMOVE,
  syAcquire: scripts.ACQUIRE,
  syRelease: scripts.RELEASE,
  syReconcile: scripts.RECONCILE,
  syRenewLease: scripts.RENEW_LEASE,
  syDropLease: scripts.DROP_LEASE,
  syReap: scripts.REAP,
  syDump: scripts.DUMP,
  syInstance: scripts.INSTANCE,
};

/** One instance's fields as the scripts read them; null or undefined where its hash has no entry. */
type Field = string | null | undefined;
interface InstanceFields {
  rec: string;
  reg: Field;
  seen: Field;
  qps: Field;
  gpu: Field;
  inflight: Field;
  byProxy: Record<string, number>;
}

function toInstanceState(f: InstanceFields, now: number): InstanceState {
  const record = JSON.parse(f.rec) as Omit<InstanceRecord, 'registered_at'>;
  const lastSeen = Number(f.seen);
  return {
    ...record,
    registered_at: Number(f.reg),
    last_seen_at: lastSeen,
    is_alive: now - lastSeen <= record.ttl_s * 1000,
    load: {
      inflight: Number(f.inflight ?? 0),
      qps_1m: f.qps == null ? null : Number(f.qps),
      gpu_util: f.gpu == null ? null : Number(f.gpu),
    },
    inflight_by_proxy: f.byProxy,
  };
}

const DEFAULT_INFO = (proxyId: string): ProxyInfo => ({ proxy_id: proxyId, inflight_http: 0, queued: {}, draining: false, degraded: false });

/** The shared store: ioredis with one Lua script per state change, so each change is atomic and one round trip. */
export class RedisLoadStore implements LoadStore {
  readonly redis: Redis;
  private readonly prefix: string;
  private readonly routingKey: string;
  /** Pub/sub channel on which a release that takes an instance below max_inflight publishes its id. */
  readonly capacityChannel: string;
  private readonly random: () => number;

  constructor(options: RedisLoadStoreOptions) {
    const redisOptions: RedisOptions = {
      commandTimeout: options.commandTimeoutMs ?? 2000,
      enableOfflineQueue: options.offlineQueue ?? true,
      maxRetriesPerRequest: options.offlineQueue === false ? 0 : 2,
      connectionName: options.connectionName,
      lazyConnect: false,
      retryStrategy: (attempt) => Math.min(50 * attempt, 1000),
      enableAutoPipelining: options.autoPipelining ?? false,
    };
    this.redis = new Redis(options.url, redisOptions);
    // Connection errors are surfaced through command failures and ping(); do not crash on the 'error' event.
    this.redis.on('error', () => undefined);
    this.prefix = `sy:{${options.pool ?? 'default'}}:`;
    this.routingKey = `${this.prefix}rec`;
    this.capacityChannel = `${this.prefix}freed`;
    this.random = options.random ?? Math.random;
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

  async heartbeat(instanceId: string, update: HeartbeatUpdate): Promise<boolean> {
    const ok = await this.run('syHeartbeat', instanceId, update.qps_1m ?? '', update.gpu_util ?? '');
    return ok === 1;
  }

  async remove(instanceId: string): Promise<boolean> {
    return (await this.run('syRemove', instanceId)) === 1;
  }

  async getInstance(instanceId: string): Promise<InstanceState | null> {
    const raw = (await this.run('syInstance', instanceId)) as [number, string, Field, Field, Field, Field, Field, string[]] | null;
    if (!raw) return null;
    const [now, rec, reg, seen, qps, gpu, inflight, flat] = raw;
    const byProxy: Record<string, number> = {};
    for (let i = 0; i < flat.length; i += 2) byProxy[flat[i]] = Number(flat[i + 1]);
    return toInstanceState({ rec, reg, seen, qps, gpu, inflight, byProxy }, now);
  }

  async listInstances(): Promise<InstanceState[]> {
    return (await this.dump()).instances;
  }

  async snapshot(): Promise<RegistrySnapshot> {
    const d = await this.dump();
    return {
      version: d.version,
      generated_at: d.now,
      instances: d.instances.map(({ last_seen_at: _s, is_alive: _a, load: _l, inflight_by_proxy: _b, ...record }) => record),
    };
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const r = (await this.run(
      'syAcquire',
      request.model,
      request.strategy,
      request.proxyId,
      this.random(),
      this.random(),
      JSON.stringify(request.exclude ?? []),
    )) as [number, string?, string?, number?];
    switch (r[0]) {
      case 1:
        return { kind: 'acquired', instance_id: r[1] as string, url: r[2] as string, inflight: r[3] as number };
      case 0:
        return { kind: 'unknown_model' };
      case -1:
        return { kind: 'none_alive' };
      default:
        return { kind: 'all_full' };
    }
  }

  async release(proxyId: string, instanceId: string): Promise<number | null> {
    const n = (await this.run('syRelease', proxyId, instanceId)) as number;
    return n < 0 ? null : n;
  }

  async reconcile(proxyId: string, counts: Readonly<Record<string, number>>): Promise<void> {
    // An empty object must reach Lua as a JSON object, which cjson decodes to an empty table either way.
    await this.run('syReconcile', proxyId, JSON.stringify(counts));
  }

  async renewLease(info: ProxyInfo, ttlMs: number): Promise<void> {
    await this.run('syRenewLease', info.proxy_id, Math.round(ttlMs), JSON.stringify(info));
  }

  async dropLease(proxyId: string): Promise<void> {
    await this.run('syDropLease', proxyId);
  }

  async reapExpiredLeases(): Promise<string[]> {
    return ((await this.run('syReap')) as string[]).sort();
  }

  async listProxies(): Promise<ProxyState[]> {
    return (await this.dump()).proxies;
  }

  async fleet(): Promise<FleetState> {
    const { now, instances, proxies } = await this.dump();
    return { now, instances, proxies };
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }

  private async dump(): Promise<{ now: number; version: number; instances: InstanceState[]; proxies: ProxyState[] }> {
    const raw = (await this.run('syDump')) as unknown[];
    const [now, version, rec, reg, seen, , qps, gpu, inflight, leases, leaseInfo, leaseSeen] = raw as [
      number,
      number,
      ...string[][],
    ];
    const hash = (flat: string[]) => {
      const m = new Map<string, string>();
      for (let i = 0; i < flat.length; i += 2) m.set(flat[i], flat[i + 1]);
      return m;
    };
    const [regM, seenM, qpsM, gpuM, infM, infoM, leaseSeenM] = [reg, seen, qps, gpu, inflight, leaseInfo, leaseSeen].map(hash);
    const byInstance = new Map<string, Record<string, number>>();
    for (const entry of raw.slice(12) as [string, string[]][]) {
      const [proxyId, flat] = entry;
      for (let i = 0; i < flat.length; i += 2) {
        const map = byInstance.get(flat[i]) ?? {};
        map[proxyId] = Number(flat[i + 1]);
        byInstance.set(flat[i], map);
      }
    }
    const instances: InstanceState[] = [];
    for (let i = 0; i < rec.length; i += 2) {
      const id = rec[i];
      instances.push(
        toInstanceState(
          { rec: rec[i + 1], reg: regM.get(id), seen: seenM.get(id), qps: qpsM.get(id), gpu: gpuM.get(id), inflight: infM.get(id), byProxy: byInstance.get(id) ?? {} },
          now,
        ),
      );
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
    return { now, version, instances, proxies };
  }
}
