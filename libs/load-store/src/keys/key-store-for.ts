import type { Cluster, Redis } from 'ioredis';
import type { LoadStore } from '../load-store';
import { MemoryLoadStore } from '../memory-load-store';
import type { KeyStore } from './key-store';
import { MemoryKeyStore } from './memory-key-store';
import { RedisKeyStore } from './redis-key-store';

const made = new WeakMap<LoadStore, KeyStore>();

/**
 * The key store beside a load store, on its connection: the same Redis (Redis or Cluster, keys in
 * their own slot), or one memory store shared by the control plane and proxy of one process.
 * Made once per load store, so apps need no extra wiring.
 */
export function keyStoreFor(store: LoadStore): KeyStore {
  let keys = made.get(store);
  if (!keys) {
    const redis = (store as { redis?: Redis | Cluster }).redis;
    if (store instanceof MemoryLoadStore || !redis) keys = new MemoryKeyStore();
    else keys = new RedisKeyStore(redis);
    made.set(store, keys);
  }
  return keys;
}
