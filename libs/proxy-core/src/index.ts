export * from './admission-queue';
export * from './exchange';
export * from './forwarder';
export * from './proxy-config';
export * from './proxy-runtime';
export * from './registry-cache';
export * from './slots';
export * from './shell/create-proxy-app';
