import { Inject, Injectable } from '@nestjs/common';
import type { DebugStatusResponse, InstanceLoadsResponse } from '@switchyard/contracts';
import type { LoadStore } from '@switchyard/load-store';
import { Fleet, readFleet } from '../common/fleet';
import { StoreOutage } from '../common/store-outage';
import { LOAD_STORE } from '../common/tokens';
import { toDebugStatus, toInstanceLoads } from './debug-view';

@Injectable()
export class DebugService {
  constructor(
    @Inject(LOAD_STORE) private readonly store: LoadStore,
    private readonly outage: StoreOutage,
  ) {}

  async instanceLoads(includeExpired: boolean): Promise<InstanceLoadsResponse> {
    return toInstanceLoads(await this.read(), includeExpired, Date.now());
  }

  async status(): Promise<DebugStatusResponse> {
    return toDebugStatus(await this.read(), Date.now());
  }

  /** A store outage is a 503 in the OpenAI error shape, not a 500. */
  private read(): Promise<Fleet> {
    return this.outage.call(() => readFleet(this.store));
  }
}
