import { describeLoadStoreContract } from './load-store.contract';
import { MemoryLoadStore } from './memory-load-store';

describeLoadStoreContract('memory', async () => new MemoryLoadStore(), async (s) => s.close());
