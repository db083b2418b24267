import { HttpException } from '@nestjs/common';
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
});
