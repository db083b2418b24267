import { describeLoadStoreContract } from './load-store.contract';
import { MemoryLoadStore } from './memory-load-store';

describeLoadStoreContract('memory', async (options) => new MemoryLoadStore(options), async (s) => s.close());

describe('MemoryLoadStore specifics', () => {
  it('finds its registry marker missing once, when new, and kept after (an in-process store is never emptied)', async () => {
    const store = new MemoryLoadStore();
    expect(await store.ensureRegistryMarker()).toBe('missing');
    expect(await store.ensureRegistryMarker()).toBe('kept');
  });
});
