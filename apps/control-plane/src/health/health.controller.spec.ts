import { HttpException, Logger } from '@nestjs/common';
import { MemoryLoadStore } from '@switchyard/load-store';
import { ControlPlaneMetrics } from '../metrics/control-plane-metrics';
import { HealthController } from './health.controller';

class FlakyStore extends MemoryLoadStore {
  down = false;
  override async ping() {
    if (this.down) throw new Error('connect ECONNREFUSED');
  }
}

describe('HealthController readyz', () => {
  const store = new FlakyStore();
  const metrics = new ControlPlaneMetrics(store);
  const health = new HealthController(store, metrics);
  afterAll(() => metrics.registry.clear());

  it('is ready, then 503 with an OpenAI error and the store state while the store is down, then ready again', async () => {
    expect(await health.readyz()).toEqual({ status: 'ready', store: 'ok' });
    store.down = true;
    const err = await health.readyz().then(
      () => null,
      (e: HttpException) => e,
    );
    expect(err?.getStatus()).toBe(503);
    expect(err?.getResponse()).toEqual({
      status: 'not_ready',
      store: 'unreachable',
      error: { message: 'store unreachable: connect ECONNREFUSED', type: 'service_unavailable', code: 'store_unreachable' },
    });
    store.down = false;
    expect(await health.readyz()).toEqual({ status: 'ready', store: 'ok' });
  });

  it('logs a change of readiness once, not every failing probe', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    store.down = true;
    for (let i = 0; i < 3; i++) await health.readyz().catch(() => undefined);
    store.down = false;
    await health.readyz();
    await health.readyz();
    expect(warn.mock.calls).toEqual([['store unreachable: not ready (connect ECONNREFUSED)']]);
    expect(log.mock.calls).toEqual([['store reachable again: ready']]);
    warn.mockRestore();
    log.mockRestore();
  });
});
