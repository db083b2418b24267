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

describe('AdmissionQueue with affinity and route exclusions', () => {
  const slot = (instanceId: string) => ({ kind: 'acquired' as const, slot: { instanceId, url: '', release: () => undefined } });

  it('a waiter held to a full instance (hard affinity) does not hold back the waiter behind it, which takes free capacity at once; it gets its own instance when that frees', async () => {
    const asked: (string | undefined)[] = [];
    let free = false;
    const queue = new AdmissionQueue({
      max: 10,
      timeoutMs: 60_000,
      slots: {
        acquire: async (_model, _tried, affinity) => {
          asked.push(affinity?.key);
          // The bound instance stays full until `free`; another has room.
          if (affinity && !free) return { kind: 'all_full' };
          return slot(affinity ? 'bound' : 'any');
        },
      },
    });
    const signal = new ExchangeSignal();
    const sticky = queue.wait('m', signal, [], { key: 'r:1', mode: 'hard', ttlMs: 1000 });
    const plain = await queue.wait('m', signal);
    expect(plain.kind === 'acquired' && plain.slot.instanceId).toBe('any');
    expect(queue.length).toBe(1);
    expect(asked).toContain('r:1');
    free = true;
    queue.kick();
    const a = await sticky;
    expect(a.kind === 'acquired' && a.slot.instanceId).toBe('bound');
    expect(queue.length).toBe(0);
  });

  it('a waiter free to take any instance that finds all full ends the round: those behind it are not asked', async () => {
    let asks = 0;
    const queue = new AdmissionQueue({
      max: 10,
      timeoutMs: 60_000,
      slots: {
        acquire: async () => {
          asks += 1;
          return { kind: 'all_full' };
        },
      },
    });
    const signal = new ExchangeSignal();
    const waits = [queue.wait('m', signal), queue.wait('m', signal), queue.wait('m', signal)];
    await new Promise((r) => setTimeout(r, 20));
    const before = asks;
    queue.kick();
    await new Promise((r) => setTimeout(r, 20));
    expect(asks - before).toBe(1);
    signal.abort(new Error('the client left'));
    expect((await Promise.all(waits)).map((o) => o.kind)).toEqual(['gone', 'gone', 'gone']);
  });
});
