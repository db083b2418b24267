export * from './args';
export * from './client';
export * from './format';
export * from './cli';
