export * from './proxy-config';
export * from './proxy-server';
