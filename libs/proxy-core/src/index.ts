export * from './proxy-config';
export * from './proxy-runtime';
export * from './registry-cache';
export * from './shell/create-proxy-app';
