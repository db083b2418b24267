export * from './openai-error.filter';
export * from './pino-nest-logger';
