import { z } from 'zod';

/** LOG_TIME: `epoch` (pino's default, ms since 1970) or `iso` (ISO 8601, UTC), in every app's JSON logs. */
export const logTimeSchema = z.enum(['iso', 'epoch'], { message: 'must be iso or epoch' }).default('epoch');

export type LogTime = z.infer<typeof logTimeSchema>;

/** pino's `timestamp` option for LOG_TIME (pino's own stdTimeFunctions, written out so this lib needs no pino). */
export function logTimestamp(mode: LogTime): () => string {
  return mode === 'iso' ? () => `,"time":"${new Date().toISOString()}"` : () => `,"time":${Date.now()}`;
}
