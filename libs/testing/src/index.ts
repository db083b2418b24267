export * from './redis-server';
export * from './wait';
