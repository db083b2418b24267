import { Logger } from '@nestjs/common';
import { LoadStore, MemoryLoadStore } from '@switchyard/load-store';
import { loadControlPlaneConfig } from '../config';
import { RegistryKeeperService } from './registry-keeper.service';

/** The store the keeper talks to; `wipe()` swaps in an empty one, as a Redis restarted without persistence looks. */
function wipeableStore(): { store: LoadStore; wipe: () => MemoryLoadStore } {
  let inner = new MemoryLoadStore();
  const store = new Proxy({} as LoadStore, { get: (_t, key) => (inner as unknown as Record<string | symbol, unknown>)[key] && ((inner as unknown as Record<string | symbol, (...a: unknown[]) => unknown>)[key] as (...a: unknown[]) => unknown).bind(inner) });
  return { store, wipe: () => (inner = new MemoryLoadStore()) };
}

describe('RegistryKeeperService', () => {
  beforeAll(() => jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined));
  afterAll(() => jest.restoreAllMocks());

  it('registers every known instance again after the store comes back empty, with all its fields (pool included)', async () => {
    const { store, wipe } = wipeableStore();
    const keeper = new RegistryKeeperService(store, loadControlPlaneConfig({}), []);
    const record = { instance_id: 'a', url: 'http://127.0.0.1:1', models: ['m'], endpoints: ['/v1/chat/completions'], tags: ['t'], weight: 3, max_inflight: 7, meta: { k: 1 }, ttl_s: 30, pool: 'p1' };
    await store.register(record);
    await keeper.keep();
    await keeper.keep();
    const fresh = wipe();
    await keeper.keep();
    const { registered_at: _r, last_seen_at: _s, is_alive: _a, load: _l, inflight_by_proxy: _b, engine: _e, saturated: _x, ...back } = (await fresh.getInstance('a'))!;
    expect(back).toEqual(record);
  });
});
