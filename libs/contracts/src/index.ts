export * from './errors';
export * from './engine';
export * from './instance';
export * from './heartbeat';
export * from './events';
export * from './proxy';
export * from './debug';
export * from './keys';
