export * from './parse-engine-metrics';
export * from './engine-health';
export * from './exposition';
