export * from './config-or-exit';
export * from './config-file';
