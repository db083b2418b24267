import { AdmissionQueue } from './admission-queue';
import { ProxyMetrics } from './proxy-metrics';

describe('AdmissionQueue depth', () => {
  it('counts models named like JavaScript object keys as ordinary names, and /metrics renders them', async () => {
    // Every instance stays full: waiters only leave by abort.
    const queue = new AdmissionQueue({ max: 10, timeoutMs: 60_000, slots: { acquire: async () => ({ kind: 'all_full' }) } });
    const abort = new AbortController();
    const waits = ['constructor', 'constructor', 'toString', '__proto__'].map((model) => queue.wait(model, abort.signal));
    expect({ ...queue.depth }).toEqual({ constructor: 2, toString: 1, ['__proto__']: 1 });
    const metrics = new ProxyMetrics({
      inflightHttp: () => 0,
      degraded: () => false,
      controlPlaneReachable: () => true,
      draining: () => false,
      registrySize: () => 0,
      instanceInflight: () => new Map(),
      queued: () => queue.depth,
    }, { proxyId: 'p', worker: 0 });
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^switchyard_proxy_queue_depth\{model="constructor"\} 2$/m);
    expect(text).toMatch(/^switchyard_proxy_queue_depth\{model="__proto__"\} 1$/m);
    abort.abort();
    expect((await Promise.all(waits)).map((o) => o.kind)).toEqual(['gone', 'gone', 'gone', 'gone']);
    expect({ ...queue.depth }).toEqual({});
  });
});
