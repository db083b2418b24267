import { MemoryLoadStore } from '@switchyard/load-store';
import { ControlPlaneMetrics } from './control-plane-metrics';

const record = (id: string, models: string[]) => ({ instance_id: id, url: `http://127.0.0.1:1/${id}`, models, endpoints: [], tags: [], weight: 1, max_inflight: null, meta: {}, ttl_s: 10 });

/** The value of one sample line, or undefined when the scrape has no such sample. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

class FlakyStore extends MemoryLoadStore {
  down = false;
  override async fleet() {
    if (this.down) throw new Error('connection refused');
    return super.fleet();
  }
}

describe('ControlPlaneMetrics', () => {
  let now = 0;
  let store: FlakyStore;
  let metrics: ControlPlaneMetrics;

  beforeEach(async () => {
    now = 1_000_000;
    store = new FlakyStore({ now: () => now, random: () => 0 });
    metrics = new ControlPlaneMetrics(store);
    await store.register(record('a', ['llama']));
    await store.register(record('b', ['llama']));
    await store.renewLease({ proxy_id: 'p1', inflight_http: 1, queued: { llama: 2, qwen: 1 }, draining: false, degraded: false }, 5000);
    await store.renewLease({ proxy_id: 'p2', inflight_http: 0, queued: { llama: 4 }, draining: true, degraded: false }, 5000);
    await store.acquire({ proxyId: 'p1', model: 'llama', strategy: 'least_load' });
    await store.acquire({ proxyId: 'p1', model: 'llama', strategy: 'least_load' });
    await store.acquire({ proxyId: 'p2', model: 'llama', strategy: 'least_load' });
    await store.heartbeat('a', { qps_1m: 2.5, gpu_util: 40 });
  });

  afterEach(() => metrics.registry.clear());

  it('fills the fleet gauges from the store at scrape time', async () => {
    const text = await metrics.registry.metrics();
    expect(sample(text, 'switchyard_store_up')).toBe(1);
    expect(sample(text, 'switchyard_instances{state="alive"}')).toBe(2);
    expect(sample(text, 'switchyard_instances{state="expired"}')).toBe(0);
    expect(sample(text, 'switchyard_instance_inflight{instance_id="a"}')).toBe(2);
    expect(sample(text, 'switchyard_instance_inflight{instance_id="b"}')).toBe(1);
    expect(sample(text, 'switchyard_instance_qps_1m{instance_id="a"}')).toBe(2.5);
    // The ratio (0..1), and the deprecated percentage kept one release.
    expect(sample(text, 'switchyard_instance_gpu_utilization_ratio{instance_id="a"}')).toBe(0.4);
    expect(sample(text, 'switchyard_instance_gpu_util{instance_id="a"}')).toBe(40);
    expect(sample(text, 'switchyard_proxies{state="alive"}')).toBe(2);
    expect(sample(text, 'switchyard_proxies{state="draining"}')).toBe(1);
    expect(sample(text, 'switchyard_proxies{state="expired"}')).toBe(0);
    expect(sample(text, 'switchyard_queued_requests')).toBe(7);
    expect(sample(text, 'switchyard_queued_total')).toBe(7);
    expect(text).toMatch(/# HELP switchyard_queued_total Deprecated/);
    expect(text).toContain('switchyard_control_plane_process_cpu_user_seconds_total');
  });

  it('has no sample for a metric an instance never reported', async () => {
    const text = await metrics.registry.metrics();
    expect(sample(text, 'switchyard_instance_qps_1m{instance_id="b"}')).toBeUndefined();
    expect(sample(text, 'switchyard_instance_gpu_util{instance_id="b"}')).toBeUndefined();
    expect(sample(text, 'switchyard_instance_gpu_utilization_ratio{instance_id="b"}')).toBeUndefined();
  });

  it('reads the store once per scrape', async () => {
    const reads = jest.spyOn(store, 'fleet');
    await metrics.registry.metrics();
    expect(reads).toHaveBeenCalledTimes(1);
    await metrics.registry.metrics();
    expect(reads).toHaveBeenCalledTimes(2);
  });

  it('follows changes between scrapes, dropping removed instances and expired leases', async () => {
    await store.remove('b');
    now += 6000;
    await store.heartbeat('a', {});
    const text = await metrics.registry.metrics();
    expect(sample(text, 'switchyard_instance_inflight{instance_id="b"}')).toBeUndefined();
    expect(sample(text, 'switchyard_proxies{state="alive"}')).toBe(0);
    expect(sample(text, 'switchyard_proxies{state="expired"}')).toBe(2);
    expect(sample(text, 'switchyard_queued_total')).toBe(0);
  });

  it('says store down, counts the error once per scrape and shows no stale fleet numbers', async () => {
    await metrics.registry.metrics();
    store.down = true;
    const text = await metrics.registry.metrics();
    expect(sample(text, 'switchyard_store_up')).toBe(0);
    expect(sample(text, 'switchyard_store_errors_total')).toBe(1);
    expect(sample(text, 'switchyard_instance_inflight{instance_id="a"}')).toBeUndefined();
    expect(sample(text, 'switchyard_instances{state="alive"}')).toBeUndefined();
    expect(sample(text, 'switchyard_queued_total')).toBeUndefined();
    store.down = false;
    const back = await metrics.registry.metrics();
    expect(sample(back, 'switchyard_store_up')).toBe(1);
    expect(sample(back, 'switchyard_store_errors_total')).toBe(1);
    expect(sample(back, 'switchyard_queued_total')).toBe(7);
  });
});
