export * from './openai-error.filter';
