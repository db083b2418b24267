export * from './config-or-exit';
export * from './config-file';
export * from './log-time';
