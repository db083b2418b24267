export * from './load-store';
export * from './memory-load-store';
export * from './redis-load-store';
export * from './pooled-load-store';
export * from './keys';
