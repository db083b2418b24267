import { HttpException } from '@nestjs/common';
import { errorBody } from '@switchyard/contracts';
import type { FleetState, LoadStore } from '@switchyard/load-store';

/** Everything the debug view, status and metrics are computed from: instances and proxies as of one moment on the store's clock. */
export type Fleet = FleetState;

/** One store read, so a contribution shown on an instance always belongs to a proxy in the same list. */
export function readFleet(store: LoadStore): Promise<Fleet> {
  return store.fleet();
}

export const storeUnavailable = (err: unknown) =>
  new HttpException(errorBody(`store unreachable: ${(err as Error)?.message ?? String(err)}`, 'service_unavailable', 'store_unreachable'), 503);
