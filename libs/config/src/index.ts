export * from './parse-env';
export * from './config-file';
