import { describeLoadStoreContract } from './load-store.contract';
import { MemoryLoadStore } from './memory-load-store';

describeLoadStoreContract('memory', async (options) => new MemoryLoadStore(options), async (s) => s.close());
