export * from './parse-engine-metrics';
export * from './engine-health';
