export * from './server-args';
export * from './stop-signals';
