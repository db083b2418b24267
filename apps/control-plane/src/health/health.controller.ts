import { Controller, Get, HttpException, Inject, Logger } from '@nestjs/common';
import { errorBody } from '@switchyard/contracts';
import type { LoadStore } from '@switchyard/load-store';
import { LOAD_STORE } from '../common/tokens';
import { ControlPlaneMetrics } from '../metrics/control-plane-metrics';

@Controller()
export class HealthController {
  private readonly logger = new Logger('readiness');
  /** Logged on change only: probes ask every few seconds. */
  private storeUp = true;

  constructor(
    @Inject(LOAD_STORE) private readonly store: LoadStore,
    private readonly metrics: ControlPlaneMetrics,
  ) {}

  @Get('healthz')
  healthz() {
    return { status: 'ok' };
  }

  /** Pings the store on every call (no cached verdict), so readiness comes back by itself with Redis. */
  @Get('readyz')
  async readyz() {
    try {
      await this.store.ping();
      if (!this.storeUp) this.logger.log('store reachable again: ready');
      this.storeUp = true;
      return { status: 'ready', store: 'ok' };
    } catch (err) {
      this.metrics.storeErrors.inc();
      if (this.storeUp) this.logger.warn(`store unreachable: not ready (${(err as Error).message})`);
      this.storeUp = false;
      const { error } = errorBody(`store unreachable: ${(err as Error).message}`, 'service_unavailable', 'store_unreachable');
      throw new HttpException({ status: 'not_ready', store: 'unreachable', error }, 503);
    }
  }
}
