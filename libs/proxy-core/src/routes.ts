import { errorBody, ErrorBody } from '@switchyard/contracts';

/** The route whose answers are kept by the engine and continued with `previous_response_id` (see affinity.ts). */
export const RESPONSES_ROUTE = '/v1/responses';

/** OpenAI routes forwarded to instances; each goes only to instances that list it in their `endpoints`. */
export const FORWARDED_ROUTES = new Set([
  '/v1/chat/completions',
  '/v1/completions',
  '/v1/embeddings',
  RESPONSES_ROUTE,
  '/v1/rerank',
  '/v1/score',
  '/v1/audio/transcriptions',
  '/v1/audio/translations',
  '/v1/audio/speech',
]);

/** Routes whose body is multipart/form-data (an audio file and form fields), not JSON. */
const MULTIPART_ROUTES = new Set(['/v1/audio/transcriptions', '/v1/audio/translations']);

/** The model, and the JSON body parsed once for the steps after (keys, affinity, usage); null for a multipart form. */
export type ModelOf = { model: string; parsed: Record<string, unknown> | null } | { status: number; error: ErrorBody };

const missingModel = (): ModelOf => ({ status: 400, error: errorBody('model: required, a non-empty string', 'invalid_request_error', 'invalid_field', 'model') });

/** The request's `model`: the JSON body's field, or the multipart form's `model` field on the audio routes. */
export function modelOf(route: string, contentType: string | undefined, body: Buffer): ModelOf {
  if (MULTIPART_ROUTES.has(route)) {
    const boundary = boundaryOf(contentType);
    if (!boundary) return { status: 400, error: errorBody('content-type: must be multipart/form-data with a boundary', 'invalid_request_error', 'invalid_content_type') };
    const model = formField(body, boundary, 'model');
    return model ? { model, parsed: null } : missingModel();
  }
  let parsed: Record<string, unknown> | null;
  try {
    parsed = JSON.parse(body.toString('utf8')) as Record<string, unknown> | null;
  } catch {
    return { status: 400, error: errorBody('body: not valid JSON', 'invalid_request_error', 'invalid_json') };
  }
  const model = parsed?.model;
  return typeof model === 'string' && model ? { model, parsed } : missingModel();
}

/** The boundary parameter of a multipart/form-data content type (RFC 7578), quoted or not. */
export function boundaryOf(contentType: string | undefined): string | undefined {
  if (!contentType || !/^multipart\/form-data\s*;/i.test(contentType)) return undefined;
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
  return m ? (m[1] ?? m[2]) : undefined;
}

/** Part headers larger than this are not a form field's. */
const PART_HEADERS_MAX = 8 * 1024;

/**
 * The value of a plain (non-file) form field, scanning part headers only: each part is found by
 * its delimiter (`\r\n--boundary`, searched natively), and the file parts' bytes are skipped,
 * never copied or decoded.
 */
export function formField(body: Buffer, boundary: string, name: string): string | undefined {
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  // The first delimiter may open the body without the leading CRLF.
  let at: number;
  if (body.subarray(0, delimiter.length - 2).equals(delimiter.subarray(2))) at = delimiter.length - 2;
  else {
    const first = body.indexOf(delimiter);
    if (first < 0) return undefined;
    at = first + delimiter.length;
  }
  for (;;) {
    // After a delimiter: `--` closes the form, else CRLF and the part's headers.
    if (body[at] === 0x2d && body[at + 1] === 0x2d) return undefined;
    const headersStart = body.indexOf('\r\n', at) + 2;
    if (headersStart < 2) return undefined;
    const headersEnd = body.indexOf('\r\n\r\n', headersStart);
    if (headersEnd < 0 || headersEnd - headersStart > PART_HEADERS_MAX) return undefined;
    const next = body.indexOf(delimiter, headersEnd + 4);
    if (next < 0) return undefined;
    const disposition = /^content-disposition:[^\r\n]*$/im.exec(body.toString('latin1', headersStart, headersEnd))?.[0] ?? '';
    const fieldName = /;\s*name="([^"]*)"/i.exec(disposition)?.[1];
    if (fieldName === name && !/;\s*filename\*?=/i.test(disposition)) return body.toString('utf8', headersEnd + 4, next).trim() || undefined;
    at = next + delimiter.length;
  }
}
