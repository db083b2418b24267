import { Logger } from '@nestjs/common';
import { MemoryLoadStore, REAP_GRACE_MS } from '@switchyard/load-store';
import { loadControlPlaneConfig } from '../config';
import { ControlPlaneMetrics } from '../metrics/control-plane-metrics';
import { LeadershipService } from '../liveness/leadership.service';
import { LeaseReaperService } from './lease-reaper.service';

const record = (id: string) => ({ instance_id: id, url: `http://127.0.0.1:1/${id}`, models: ['m'], endpoints: [], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 60 });
const info = (proxy_id: string) => ({ proxy_id, inflight_http: 0, queued: {}, draining: false, degraded: false });

class FlakyStore extends MemoryLoadStore {
  down = false;
  override async reapExpiredLeases() {
    if (this.down) throw new Error('connection refused');
    return super.reapExpiredLeases();
  }
}

describe('LeaseReaperService', () => {
  let now: number;
  let store: FlakyStore;
  let metrics: ControlPlaneMetrics;
  let reaper: LeaseReaperService;
  let leadership: { isLeader: boolean };
  let log: jest.SpyInstance;
  let warn: jest.SpyInstance;

  beforeEach(async () => {
    now = 1_000_000;
    store = new FlakyStore({ now: () => now, random: () => 0 });
    metrics = new ControlPlaneMetrics(store);
    leadership = { isLeader: true };
    reaper = new LeaseReaperService(store, loadControlPlaneConfig({ LEASE_SWEEP_S: '0.5' }), metrics, leadership as LeadershipService);
    log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    await store.register(record('a'));
    await store.renewLease(info('dies'), 2000);
    await store.renewLease(info('lives'), 2000);
    await store.acquire({ proxyId: 'dies', model: 'm', strategy: 'least_load' });
    await store.acquire({ proxyId: 'dies', model: 'm', strategy: 'least_load' });
    await store.acquire({ proxyId: 'lives', model: 'm', strategy: 'least_load' });
  });

  afterEach(() => {
    reaper.onApplicationShutdown();
    metrics.registry.clear();
    jest.restoreAllMocks();
    jest.useRealTimers();
  });

  const counter = async (name: string) => (await metrics.registry.getSingleMetric(name)?.get())?.values[0]?.value;

  it('removes only the expired proxy contributions, after a second sweep REAP_GRACE_MS later, logs its id and counts it', async () => {
    expect(await reaper.sweep()).toEqual([]);
    now += 1500;
    await store.renewLease(info('lives'), 2000);
    now += 1000;
    // 'dies' expired 500 ms ago: this sweep takes note, the next one after the grace reaps.
    expect(await reaper.sweep()).toEqual([]);
    await store.renewLease(info('lives'), 5000);
    now += REAP_GRACE_MS;
    expect(await reaper.sweep()).toEqual(['dies']);
    const a = await store.getInstance('a');
    expect(a?.load.inflight).toBe(1);
    expect(a?.inflight_by_proxy).toEqual({ lives: 1 });
    expect(log).toHaveBeenCalledWith('reaped expired proxy leases: dies');
    expect(await counter('switchyard_leases_reaped_total')).toBe(1);
  });

  it('reaps nothing on a standby replica: only the leader sweeps', async () => {
    leadership.isLeader = false;
    now += 2500 + REAP_GRACE_MS;
    expect(await reaper.sweep()).toEqual([]);
    now += REAP_GRACE_MS;
    expect(await reaper.sweep()).toEqual([]);
    expect((await store.getInstance('a'))?.inflight_by_proxy).toMatchObject({ dies: expect.any(Number) });
    leadership.isLeader = true;
    await reaper.sweep();
    now += REAP_GRACE_MS;
    expect(await reaper.sweep()).toContain('dies');
  });

  it('warns once while the store fails, counts every failure and retries until it works', async () => {
    now += 2500;
    store.down = true;
    for (let i = 0; i < 3; i++) expect(await reaper.sweep()).toEqual([]);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0][0])).toMatch(/connection refused/);
    expect(await counter('switchyard_store_errors_total')).toBe(3);
    store.down = false;
    expect(await reaper.sweep()).toEqual([]);
    expect(log).toHaveBeenCalledWith('lease sweeps succeed again');
    now += REAP_GRACE_MS;
    expect(await reaper.sweep()).toEqual(['dies', 'lives']);
    expect(log).toHaveBeenCalledWith('lease sweeps succeed again');
    expect((await store.getInstance('a'))?.load.inflight).toBe(0);
  });

  it('sweeps on its own every LEASE_SWEEP_S', async () => {
    jest.useFakeTimers();
    const sweeps = jest.spyOn(store, 'reapExpiredLeases');
    reaper.onModuleInit();
    await jest.advanceTimersByTimeAsync(1600);
    expect(sweeps).toHaveBeenCalledTimes(3);
    reaper.onApplicationShutdown();
    await jest.advanceTimersByTimeAsync(2000);
    expect(sweeps).toHaveBeenCalledTimes(3);
  });
});
