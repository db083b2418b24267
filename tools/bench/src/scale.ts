/**
 * Selection at fleet scale: Redis's own CPU per proxied request (one select-and-acquire plus
 * its release) and selections per second, at 8 to 1,000 instances of one model, with 1 and 32
 * concurrent store clients (each a distinct proxy id), for the pre-issue-12 scripts (which read
 * every instance on every acquire) beside the current RedisLoadStore, in the same run on the
 * same redis-server.
 */
import Redis from 'ioredis';
import { RedisLoadStore } from '@switchyard/load-store';
import { RedisServer } from '@switchyard/testing';
import { OLD_ACQUIRE, OLD_REGISTER, OLD_RELEASE } from './scale-baseline';
import type { FleetRun } from './scale-fleet';

export interface ScaleSettings {
  instances: number[];
  clients: number[];
  /** How long each cell runs its acquire+release loops, in total. */
  cellMs: number;
  /** The cell's time is split into this many rounds and the cheapest is kept: the machine is shared, and the cheapest round is the one least disturbed by other work. */
  rounds: number;
}

export type Scheme = 'old' | 'new' | 'floor';

export interface ScaleCell {
  scheme: Scheme;
  instances: number;
  clients: number;
  requests: number;
  /** Wall-clock seconds the loops ran. */
  seconds: number;
  /** Acquire+release pairs per second, all clients together. */
  perSecond: number;
  /** INFO commandstats: usec of the top-level scripts (EVALSHA/EVAL, which include the commands they call) per request. */
  scriptUsPerRequest: number;
  /** used_cpu_user + used_cpu_sys of redis-server per request: scripts plus parsing, replies and the event loop. */
  processCpuUsPerRequest: number;
}

export interface ScaleResult {
  settings: ScaleSettings;
  /** The process run: proxies in front of many instances (see scale-fleet.ts); absent when wrk is missing. */
  fleet?: FleetRun[];
  redisVersion: string;
  /** The same measure for two do-nothing scripts per request (EVALSHA of 'return 1'): what the machine's state adds to any script. */
  floorUsPerRequest: number;
  cells: ScaleCell[];
}

/** The store operations one proxied request causes on the request path. */
interface RequestOps {
  acquire(): Promise<string | null>;
  release(id: string): Promise<void>;
  close(): Promise<void>;
}

const MODEL = 'scale-model';
const instanceId = (i: number) => `inst-${String(i).padStart(5, '0')}`;

function newScheme(url: string, pool: string, proxyId: string): RequestOps {
  const store = new RedisLoadStore({ url, pool, commandTimeoutMs: 60_000 });
  return {
    acquire: async () => {
      const r = await store.acquire({ proxyId, model: MODEL, strategy: 'least_load' });
      return r.kind === 'acquired' ? r.instance_id : null;
    },
    release: async (id) => {
      await store.release(proxyId, id);
    },
    close: () => store.close(),
  };
}

type OldRedis = Redis & {
  oldAcquire(key: string, ...args: (string | number)[]): Promise<[number, string?]>;
  oldRelease(key: string, ...args: (string | number)[]): Promise<number>;
  oldRegister(key: string, ...args: (string | number)[]): Promise<number>;
};

function oldRedis(url: string): OldRedis {
  const redis = new Redis(url, { commandTimeout: 60_000 }) as OldRedis;
  redis.defineCommand('oldAcquire', { numberOfKeys: 1, lua: OLD_ACQUIRE });
  redis.defineCommand('oldRelease', { numberOfKeys: 1, lua: OLD_RELEASE });
  redis.defineCommand('oldRegister', { numberOfKeys: 1, lua: OLD_REGISTER });
  return redis;
}

function oldScheme(url: string, pool: string, proxyId: string): RequestOps {
  const redis = oldRedis(url);
  const prefix = `sy:{${pool}}:`;
  return {
    acquire: async () => {
      const r = await redis.oldAcquire(`${prefix}rec`, prefix, MODEL, 'least_load', proxyId, Math.random(), Math.random(), '[]');
      return r[0] === 1 ? (r[1] as string) : null;
    },
    release: async (id) => {
      await redis.oldRelease(`${prefix}rec`, prefix, proxyId, id);
    },
    close: async () => {
      redis.disconnect();
    },
  };
}

/** Two do-nothing scripts per request: the floor any two-script request pays on this machine right now. */
function floorScheme(url: string): RequestOps {
  const redis = new Redis(url) as Redis & { syNothing(): Promise<number> };
  redis.defineCommand('syNothing', { numberOfKeys: 0, lua: 'return 1' });
  return {
    acquire: async () => String(await redis.syNothing()),
    release: async () => {
      await redis.syNothing();
    },
    close: async () => {
      redis.disconnect();
    },
  };
}

async function register(scheme: Scheme, url: string, pool: string, n: number): Promise<void> {
  if (scheme === 'floor') return;
  const record = (i: number) => ({
    instance_id: instanceId(i),
    url: `http://127.0.0.1:${10_000 + (i % 50_000)}`,
    models: [MODEL],
    endpoints: ['/v1/chat/completions'],
    tags: [],
    weight: 1,
    max_inflight: null,
    meta: {},
    ttl_s: 3600,
  });
  if (scheme === 'new') {
    const store = new RedisLoadStore({ url, pool, commandTimeoutMs: 60_000 });
    for (let i = 0; i < n; i++) await store.register(record(i));
    await store.close();
    return;
  }
  const redis = oldRedis(url);
  const prefix = `sy:{${pool}}:`;
  for (let i = 0; i < n; i++) {
    const r = record(i);
    await redis.oldRegister(`${prefix}rec`, prefix, r.instance_id, JSON.stringify(r), r.url, 1, '', 3_600_000, JSON.stringify(r.models));
  }
  redis.disconnect();
}

function parseInfo(text: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0) m.set(line.slice(0, i), line.slice(i + 1));
  }
  return m;
}

/** usec of the top-level script calls; commands a script calls are counted inside its own usec (and again under their own names, which are left out). */
function scriptUsec(commandstats: Map<string, string>): number {
  let total = 0;
  for (const name of ['cmdstat_evalsha', 'cmdstat_eval']) {
    const usec = /usec=(\d+)/.exec(commandstats.get(name) ?? '');
    if (usec) total += Number(usec[1]);
  }
  return total;
}

async function processCpuS(admin: Redis): Promise<number> {
  const cpu = parseInfo(await admin.info('cpu'));
  return Number(cpu.get('used_cpu_user')) + Number(cpu.get('used_cpu_sys'));
}

async function runCell(url: string, admin: Redis, scheme: Scheme, instances: number, clients: number, cellMs: number, rounds: number): Promise<ScaleCell> {
  const pool = `scale-${scheme}-${instances}-${clients}`;
  await register(scheme, url, pool, instances);
  const ops = Array.from({ length: clients }, (_, i) => (scheme === 'floor' ? floorScheme(url) : (scheme === 'new' ? newScheme : oldScheme)(url, pool, `bench-proxy-${i}`)));
  // One warm-up pair per client loads the scripts and opens the connections before the stats reset.
  for (const o of ops) {
    const id = await o.acquire();
    if (id) await o.release(id);
  }
  let best: ScaleCell | undefined;
  for (let round = 0; round < rounds; round++) {
    await admin.config('RESETSTAT');
    const cpu0 = await processCpuS(admin);
    const t0 = performance.now();
    const deadline = t0 + cellMs / rounds;
    let requests = 0;
    await Promise.all(
      ops.map(async (o) => {
        while (performance.now() < deadline) {
          const id = await o.acquire();
          if (!id) throw new Error(`${scheme} acquire at ${instances} instances found no instance`);
          await o.release(id);
          requests += 1;
        }
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    const stats = parseInfo(await admin.info('commandstats'));
    const cpu1 = await processCpuS(admin);
    const cell: ScaleCell = {
      scheme,
      instances,
      clients,
      requests,
      seconds,
      perSecond: requests / seconds,
      scriptUsPerRequest: scriptUsec(stats) / requests,
      processCpuUsPerRequest: ((cpu1 - cpu0) * 1e6) / requests,
    };
    if (!best || cell.scriptUsPerRequest < best.scriptUsPerRequest) best = cell;
  }
  for (const o of ops) await o.close();
  return best as ScaleCell;
}

export async function runScale(settings: ScaleSettings, log: (m: string) => void): Promise<ScaleResult> {
  const server = new RedisServer();
  await server.start();
  const admin = new Redis(server.url);
  try {
    const redisVersion = parseInfo(await admin.info('server')).get('redis_version') ?? '?';
    const floor = await runCell(server.url, admin, 'floor', 0, 1, settings.cellMs, settings.rounds);
    log(`scale floor (two do-nothing scripts per request): ${floor.scriptUsPerRequest.toFixed(1)} µs`);
    const cells: ScaleCell[] = [];
    for (const instances of settings.instances) {
      for (const clients of settings.clients) {
        for (const scheme of ['old', 'new'] as const) {
          const cell = await runCell(server.url, admin, scheme, instances, clients, settings.cellMs, settings.rounds);
          log(
            `scale ${scheme} ${instances} instances, ${clients} clients: ${cell.scriptUsPerRequest.toFixed(1)} µs scripts/request, ` +
              `${cell.processCpuUsPerRequest.toFixed(1)} µs redis CPU/request, ${Math.round(cell.perSecond)} requests/s`,
          );
          cells.push(cell);
        }
      }
    }
    return { settings, redisVersion, floorUsPerRequest: floor.scriptUsPerRequest, cells };
  } finally {
    admin.disconnect();
    await server.stop();
  }
}
