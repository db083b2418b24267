import { AdmissionQueue } from './admission-queue';
import { ExchangeSignal } from './exchange';
import { ProxyMetrics } from './proxy-metrics';

describe('AdmissionQueue depth', () => {
  it('counts models named like JavaScript object keys as ordinary names, and /metrics renders them', async () => {
    // Every instance stays full: waiters only leave by abort.
    const queue = new AdmissionQueue({ max: 10, timeoutMs: 60_000, slots: { acquire: async () => ({ kind: 'all_full' }) } });
    const abort = new ExchangeSignal();
    const waits = ['constructor', 'constructor', 'toString', '__proto__'].map((model) => queue.wait(model, abort));
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
    abort.abort(new Error('the client left'));
    expect((await Promise.all(waits)).map((o) => o.kind)).toEqual(['gone', 'gone', 'gone', 'gone']);
    expect({ ...queue.depth }).toEqual({});
  });
});

describe('AdmissionQueue with affinity', () => {
  it('asks for the head waiter with its own affinity, so a hard one waits for its instance while the others wait behind it, first come first served', async () => {
    const asked: (string | undefined)[] = [];
    let free = false;
    const slot = (instanceId: string) => ({ kind: 'acquired' as const, slot: { instanceId, url: '', release: () => undefined } });
    const queue = new AdmissionQueue({
      max: 10,
      timeoutMs: 60_000,
      slots: {
        acquire: async (_model, _tried, affinity) => {
          asked.push(affinity?.key);
          // The bound instance stays full until `free`; anything else has room.
          if (affinity && !free) return { kind: 'all_full' };
          return slot(affinity ? 'bound' : 'any');
        },
      },
    });
    const signal = new ExchangeSignal();
    const sticky = queue.wait('m', signal, [], { key: 'r:1', mode: 'hard', ttlMs: 1000 });
    const plain = queue.wait('m', signal);
    await new Promise((r) => setTimeout(r, 20));
    expect(queue.length).toBe(2);
    expect(asked.every((k) => k === 'r:1')).toBe(true);
    free = true;
    queue.kick();
    const [a, b] = await Promise.all([sticky, plain]);
    expect(a.kind === 'acquired' && a.slot.instanceId).toBe('bound');
    expect(b.kind === 'acquired' && b.slot.instanceId).toBe('any');
    expect(asked.slice(-2)).toEqual(['r:1', undefined]);
  });
});
