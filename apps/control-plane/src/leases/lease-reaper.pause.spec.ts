import { Logger } from '@nestjs/common';
import { ProxyInfo } from '@switchyard/contracts';
import type Redis from 'ioredis';
import { RedisLoadStore } from '@switchyard/load-store';
import { RedisServer } from '@switchyard/testing';
import { loadControlPlaneConfig } from '../config';
import { ControlPlaneMetrics } from '../metrics/control-plane-metrics';
import { LeadershipService } from '../liveness/leadership.service';
import { LeaseReaperService } from './lease-reaper.service';

const LEASE_TTL_MS = 500;
const RENEW_EVERY_MS = 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const info = (proxy_id: string): ProxyInfo => ({ proxy_id, inflight_http: 10, queued: {}, draining: false, degraded: false });

/** A proxy as far as leases go: its own short-timeout connection, renewing every RENEW_EVERY_MS while `renewing`. */
class LeaseHolder {
  readonly store: RedisLoadStore;
  renewing = true;
  private timer: NodeJS.Timeout;
  constructor(url: string, readonly id: string) {
    this.store = new RedisLoadStore({ url, pool: 'pause', commandTimeoutMs: 200, offlineQueue: false });
    this.timer = setInterval(() => {
      if (this.renewing) this.store.renewLease(info(this.id), LEASE_TTL_MS).catch(() => undefined);
    }, RENEW_EVERY_MS);
  }
  async close() {
    clearInterval(this.timer);
    await this.store.close();
  }
}

// Issue 12: a Redis that hangs longer than a lease used to run the queued sweep first on
// SIGCONT and erase every live proxy's contributions.
describe('LeaseReaperService against a redis-server that hangs (SIGSTOP) for longer than the lease', () => {
  const server = new RedisServer();
  let controlPlane: RedisLoadStore;
  let proxies: LeaseHolder[] = [];
  let reaper: LeaseReaperService;
  let metrics: ControlPlaneMetrics;
  const logged: string[] = [];

  beforeAll(async () => {
    await server.start();
  });
  afterAll(async () => {
    server.resume();
    await server.stop();
  });
  beforeEach(() => {
    jest.spyOn(Logger.prototype, 'log').mockImplementation((m: unknown) => void logged.push(String(m)));
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });
  afterEach(async () => {
    reaper?.onApplicationShutdown();
    for (const p of proxies) await p.close();
    await controlPlane?.close();
    metrics?.registry.clear();
    jest.restoreAllMocks();
  });

  it('reaps no live lease when Redis comes back, and still reaps a proxy that stopped renewing', async () => {
    controlPlane = new RedisLoadStore({ url: server.url, pool: 'pause', commandTimeoutMs: 30_000, reapGraceMs: 400 });
    await controlPlane.register({ instance_id: 'a', url: 'http://127.0.0.1:1', models: ['m'], endpoints: [], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 60 });
    proxies = [new LeaseHolder(server.url, 'proxy-1'), new LeaseHolder(server.url, 'proxy-2')];
    // 20 open streams on two proxies.
    for (const p of proxies) {
      const redis = p.store.redis as Redis;
      if (redis.status !== 'ready') await new Promise((r) => redis.once('ready', r));
      await p.store.renewLease(info(p.id), LEASE_TTL_MS);
      for (let i = 0; i < 10; i++) await p.store.acquire({ proxyId: p.id, model: 'm', strategy: 'least_load' });
    }
    metrics = new ControlPlaneMetrics(controlPlane);
    reaper = new LeaseReaperService(controlPlane, loadControlPlaneConfig({ LEASE_SWEEP_S: '0.1' }), metrics, { isLeader: true } as LeadershipService);
    reaper.onModuleInit();

    // Shared counts sampled every 50 ms through the pause; a sample asked during it answers after it.
    const samples: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const a = await controlPlane.getInstance('a');
        samples.push(a?.load.inflight ?? -1);
        await sleep(50);
      }
    })();

    await sleep(300);
    server.pause();
    await sleep(2 * LEASE_TTL_MS + 400);
    server.resume();
    await sleep(1500);
    sampling = false;
    await sampler;

    expect(samples.length).toBeGreaterThan(10);
    expect(Math.min(...samples)).toBe(20);
    expect(logged.filter((m) => m.includes('reaped'))).toEqual([]);
    const reapedTotal = async () => (await metrics.registry.getSingleMetric('switchyard_leases_reaped_total')?.get())?.values[0]?.value;
    expect(await reapedTotal()).toBe(0);
    expect((await controlPlane.getInstance('a'))?.inflight_by_proxy).toEqual({ 'proxy-1': 10, 'proxy-2': 10 });

    // The reaper still works: a proxy that stops renewing is reaped after its lease and the grace, logged by id, counted.
    proxies[1].renewing = false;
    const deadline = Date.now() + 5000;
    while ((await reapedTotal()) === 0 && Date.now() < deadline) await sleep(50);
    expect(await reapedTotal()).toBe(1);
    expect(logged).toContain('reaped expired proxy leases: proxy-2');
    expect((await controlPlane.getInstance('a'))?.inflight_by_proxy).toEqual({ 'proxy-1': 10 });
  }, 20_000);
});
