import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Redis from 'ioredis';
import { freePort, RedisServer, waitForPort } from '@switchyard/testing';
import { BYTE_ORDER, describeLoadStoreContract, record, roundRobinWalk } from './load-store.contract';
import { RedisLoadStore } from './redis-load-store';

const server = new RedisServer();
let pool = 0;

beforeAll(async () => {
  await server.start();
});
afterAll(async () => {
  await server.stop();
});

// Each case gets a pool of its own on the test's own server, so no flush is needed.
describeLoadStoreContract(
  'redis',
  async (options) => new RedisLoadStore({ url: server.url, pool: `t${++pool}`, ...options }),
  async (s) => s.close(),
);

describe('RedisLoadStore specifics', () => {
  it('finds its registry marker missing on a new pool and again after the pool was emptied, kept in between', async () => {
    const store = new RedisLoadStore({ url: server.url, pool: 'marker' });
    try {
      expect(await store.ensureRegistryMarker()).toBe('missing');
      expect(await store.ensureRegistryMarker()).toBe('kept');
      await store.register(record('x'));
      // What a Redis restarted without persistence looks like to the pool: nothing at all.
      await store.redis.del(...(await store.redis.keys('sy:{marker}:*')));
      expect(await store.ensureRegistryMarker()).toBe('missing');
      expect(await store.ensureRegistryMarker()).toBe('kept');
    } finally {
      await store.close();
    }
  });

  it('shares counts between two store clients, as two proxies do', async () => {
    const a = new RedisLoadStore({ url: server.url, pool: 'shared' });
    const b = new RedisLoadStore({ url: server.url, pool: 'shared' });
    try {
      await a.register({ instance_id: 'x', url: 'http://127.0.0.1:1', models: ['m'], endpoints: [], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 30 });
      await a.register({ instance_id: 'y', url: 'http://127.0.0.1:2', models: ['m'], endpoints: [], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 30 });
      const r1 = await a.acquire({ proxyId: 'pa', model: 'm', strategy: 'least_load' });
      const r2 = await b.acquire({ proxyId: 'pb', model: 'm', strategy: 'least_load' });
      expect(r1.kind === 'acquired' && r2.kind === 'acquired' && r1.instance_id !== r2.instance_id).toBe(true);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('announces on its capacity channel when a release takes an instance below max_inflight, and only then', async () => {
    const store = new RedisLoadStore({ url: server.url, pool: 'cap' });
    const sub = new Redis(server.url);
    const heard: string[] = [];
    try {
      await sub.subscribe(store.capacityChannel);
      sub.on('message', (_c: string, id: string) => heard.push(id));
      await store.register({ instance_id: 'full', url: 'http://127.0.0.1:1', models: ['m'], endpoints: [], tags: [], weight: 1, max_inflight: 2, meta: {}, ttl_s: 30 });
      await store.register({ instance_id: 'free', url: 'http://127.0.0.1:2', models: ['f'], endpoints: [], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 30 });
      for (let i = 0; i < 2; i++) await store.acquire({ proxyId: 'p', model: 'm', strategy: 'least_load' });
      await store.acquire({ proxyId: 'p', model: 'f', strategy: 'least_load' });
      await store.release('p', 'free');
      await store.release('p', 'full'); // 2 -> 1: below max
      await store.release('p', 'full'); // 1 -> 0: was not at max
      await store.redis.ping();
      await new Promise((r) => setTimeout(r, 50));
      expect(heard).toEqual(['full']);
    } finally {
      sub.disconnect();
      await store.close();
    }
  });
});

describe('RedisLoadStore fleet read across clients', () => {
  it('never shows a contribution whose proxy is missing from the same read, while another client acquires', async () => {
    const reader = new RedisLoadStore({ url: server.url, pool: 'fleet' });
    const writer = new RedisLoadStore({ url: server.url, pool: 'fleet' });
    try {
      for (const id of ['a', 'b']) await reader.register(record(id));
      // One acquire per round trip, so the writer's commands land between any two of the reader's.
      let writing = true;
      const written = (async () => {
        for (let i = 0; i < 60; i++) await writer.acquire({ proxyId: `q${i}`, model: 'm', strategy: 'least_load' });
        writing = false;
      })();
      let reads = 0;
      while (writing) {
        const f = await reader.fleet();
        const contributors = f.instances.flatMap((i) => Object.keys(i.inflight_by_proxy)).sort();
        expect(contributors).toEqual(f.proxies.map((p) => p.proxy_id));
        reads += 1;
      }
      await written;
      expect(reads).toBeGreaterThan(1);
    } finally {
      await reader.close();
      await writer.close();
    }
  });
});

// Where glibc's locale sources are installed, localedef can build en_US.UTF-8, whose collation puts 'a' before 'B'.
const canBuildLocale = existsSync('/usr/share/i18n/locales/en_US') && spawnSync('localedef', ['--help']).status === 0;

// redis-server calls setlocale(LC_COLLATE, "") and Lua's string < is strcoll, so the host's locale reaches the scripts.
(canBuildLocale ? describe : describe.skip)('RedisLoadStore on a redis-server under en_US.UTF-8', () => {
  let localeDir = '';
  let localeServer: ChildProcess;
  let url = '';
  beforeAll(async () => {
    localeDir = mkdtempSync(path.join(os.tmpdir(), 'sy-locale-'));
    const built = spawnSync('localedef', ['-i', 'en_US', '-f', 'UTF-8', path.join(localeDir, 'en_US.UTF-8')]);
    if (built.status !== 0) throw new Error(`localedef failed: ${built.stderr}`);
    // RedisServer passes on this process's environment; this server needs its own locale.
    const port = await freePort();
    localeServer = spawn(process.env.REDIS_SERVER_BIN ?? 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', localeDir], {
      stdio: 'ignore',
      env: { ...process.env, LOCPATH: localeDir, LC_ALL: 'en_US.UTF-8' },
    });
    await waitForPort(port);
    url = `redis://127.0.0.1:${port}`;
    // localedef takes seconds on a busy 2-core machine.
  }, 60_000);
  afterAll(async () => {
    if (localeServer && localeServer.exitCode === null) {
      await new Promise((resolve) => {
        localeServer.once('exit', resolve);
        localeServer.kill('SIGKILL');
      });
    }
    if (localeDir) rmSync(localeDir, { recursive: true, force: true });
  });

  it('walks round_robin in byte order, as the memory store does, though Lua itself collates by locale', async () => {
    const store = new RedisLoadStore({ url, pool: 'locale' });
    try {
      expect(await store.redis.eval("return tostring('a' < 'B')", 0)).toBe('true');
      expect(await roundRobinWalk(store)).toEqual(BYTE_ORDER);
    } finally {
      await store.close();
    }
  });
});
