import { Inject, Injectable } from '@nestjs/common';
import type { DebugStatusResponse, InstanceLoadsResponse } from '@switchyard/contracts';
import type { LoadStore } from '@switchyard/load-store';
import { Fleet, readFleet, storeUnavailable } from '../common/fleet';
import { LOAD_STORE } from '../common/tokens';
import { ControlPlaneMetrics } from '../metrics/control-plane-metrics';
import { toDebugStatus, toInstanceLoads } from './debug-view';

@Injectable()
export class DebugService {
  constructor(
    @Inject(LOAD_STORE) private readonly store: LoadStore,
    private readonly metrics: ControlPlaneMetrics,
  ) {}

  async instanceLoads(includeDead: boolean): Promise<InstanceLoadsResponse> {
    return toInstanceLoads(await this.read(), includeDead, Date.now());
  }

  async status(): Promise<DebugStatusResponse> {
    return toDebugStatus(await this.read(), Date.now());
  }

  /** A store outage is a 503 in the OpenAI error shape, not a 500. */
  private async read(): Promise<Fleet> {
    try {
      return await readFleet(this.store);
    } catch (err) {
      this.metrics.storeErrors.inc();
      throw storeUnavailable(err);
    }
  }
}
