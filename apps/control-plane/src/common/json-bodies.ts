import { errorBody } from '@switchyard/contracts';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Methods whose body means nothing here: an empty one is accepted whatever content-type a client library puts on it. */
const BODYLESS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);

const httpError = (status: number, message: string, code: string) => Object.assign(new Error(message), { statusCode: status, code });

/**
 * JSON.parse keeps `__proto__` as a plain key, but any later assignment of it would set a
 * prototype instead; so it is refused. Walked without recursion: nesting is bounded only by
 * the body size here (meta's depth limit comes later, in validation).
 */
function hasProtoKey(root: unknown): boolean {
  const stack = [root];
  while (stack.length) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    if (Object.hasOwn(v, '__proto__')) return true;
    for (const child of Object.values(v)) stack.push(child);
  }
  return false;
}

/**
 * Admin bodies are JSON and nothing else: a form or text body is 415, so a web page cannot
 * post one cross-origin without a CORS preflight (which the control plane does not answer).
 * An empty body is no body: `DELETE` with `content-type: application/json` and nothing after
 * it deletes, as clients that always send that header expect.
 */
export function acceptJsonBodiesOnly(fastify: FastifyInstance): void {
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = String(body);
    if (text === '' || (BODYLESS.has(req.method) && text.trim() === '')) return done(null, undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      return done(httpError(400, `body: not valid JSON (${(err as Error).message})`, 'invalid_body'), undefined);
    }
    if (text.includes('"__proto__"') && hasProtoKey(parsed)) return done(httpError(400, 'body: a key named __proto__ is not accepted', 'invalid_body'), undefined);
    done(null, parsed);
  });
  fastify.addContentTypeParser('*', { parseAs: 'string' }, (req, body, done) => {
    if (body === '' && BODYLESS.has(req.method)) return done(null, undefined);
    const type = req.headers['content-type'];
    done(httpError(415, `content-type: ${type ? `${type.split(';')[0]} is not accepted` : 'missing'}; send the body as application/json`, 'unsupported_media_type'), undefined);
  });
}

/** Errors Fastify answers before any route runs (a malformed URL, a path parameter over maxParamLength), in the OpenAI shape. */
export function frameworkErrors(error: FastifyError, _req: FastifyRequest, reply: FastifyReply): void {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    void reply.status(414).send(errorBody('path: a path segment is too long (instance ids are at most 200 characters)', 'invalid_request_error', 'uri_too_long'));
    return;
  }
  void reply.status(400).send(errorBody(`path: ${error.message}`, 'invalid_request_error', 'bad_url'));
}
