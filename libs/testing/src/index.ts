export * from './redis-server';
export * from './wait';
export * from './redis-cluster';
