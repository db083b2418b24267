import { HttpException } from '@nestjs/common';
import { errorBody, InstanceState, ProxyState } from '@switchyard/contracts';
import type { LoadStore } from '@switchyard/load-store';

/** Everything the debug view, status and metrics are computed from. */
export interface Fleet {
  instances: InstanceState[];
  proxies: ProxyState[];
}

export async function readFleet(store: LoadStore): Promise<Fleet> {
  const [instances, proxies] = await Promise.all([store.listInstances(), store.listProxies()]);
  return { instances, proxies };
}

export const storeUnavailable = (err: unknown) =>
  new HttpException(errorBody(`store unreachable: ${(err as Error)?.message ?? String(err)}`, 'service_unavailable', 'store_unreachable'), 503);
