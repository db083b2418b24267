import { ZodError } from 'zod';

/** The OpenAI error shape every Switchyard HTTP error uses. */
export interface ErrorBody {
  error: {
    message: string;
    type: string;
    code: string | null;
    param?: string | null;
  };
}

export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'server_error'
  | 'service_unavailable'
  | 'timeout_error';

export function errorBody(message: string, type: ErrorType, code: string | null, param?: string | null): ErrorBody {
  const error: ErrorBody['error'] = { message, type, code };
  if (param !== undefined) error.param = param;
  return { error };
}

/** Dotted path of the first failing field, e.g. `models.0` or `weight`. */
export function zodErrorParam(err: ZodError): string | null {
  const first = err.issues[0];
  return first && first.path.length ? first.path.join('.') : null;
}

/** One line naming every failing field: `models: Required; weight: Number must be greater than 0`. */
export function formatZodError(err: ZodError): string {
  return err.issues
    .map((issue) => {
      if (issue.code === 'unrecognized_keys') {
        return issue.keys.map((k) => `${[...issue.path, k].join('.')}: unknown field`).join('; ');
      }
      const where = issue.path.length ? issue.path.join('.') : 'body';
      return `${where}: ${issue.message}`;
    })
    .join('; ');
}
