export * from './key-names';
export * from './key-store';
export * from './memory-key-store';
export * from './redis-key-store';
export * from './key-store-for';
