import { HttpException } from '@nestjs/common';
import { errorBody, formatZodError, zodErrorParam } from '@switchyard/contracts';
import type { ZodType, ZodTypeDef } from 'zod';

/** Validates a request body; a failure is a 400 naming the field, before anything is written. */
export function parseBody<T>(schema: ZodType<T, ZodTypeDef, unknown>, body: unknown): T {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new HttpException(errorBody('body: must be a JSON object', 'invalid_request_error', 'invalid_body'), 400);
  }
  const r = schema.safeParse(body);
  if (!r.success) {
    throw new HttpException(errorBody(formatZodError(r.error), 'invalid_request_error', 'invalid_field', zodErrorParam(r.error)), 400);
  }
  return r.data;
}
