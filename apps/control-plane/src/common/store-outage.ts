import { HttpException, Injectable, Logger } from '@nestjs/common';
import { ControlPlaneMetrics } from '../metrics/control-plane-metrics';
import { storeUnavailable } from './fleet';

/**
 * Every admin and debug route reaches the store through call(): while it is unreachable they
 * answer 503 `store_unreachable`, and the outage is logged once when it starts and once when it
 * ends, not a stack per request.
 */
@Injectable()
export class StoreOutage {
  private readonly logger = new Logger('store');
  private down = false;

  constructor(private readonly metrics: ControlPlaneMetrics) {}

  async call<T>(fn: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await fn();
    } catch (err) {
      throw this.failed(err);
    }
    if (this.down) {
      this.down = false;
      this.logger.log('store reachable again: admin routes answer again');
    }
    return result;
  }

  private failed(err: unknown): HttpException {
    this.metrics.storeErrors.inc();
    if (!this.down) {
      this.down = true;
      this.logger.warn(`store unreachable: admin and debug routes answer 503 until it is back (${(err as Error)?.message ?? String(err)})`);
    }
    return storeUnavailable(err);
  }
}
