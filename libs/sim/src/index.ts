export * from './sim-config';
export * from './sim-server';
export * from './batcher';
export * from './agent';
