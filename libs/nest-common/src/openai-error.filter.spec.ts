import { ArgumentsHost, HttpException, NotFoundException } from '@nestjs/common';
import { OpenAiErrorFilter } from './openai-error.filter';

function run(exception: unknown): { status: number; body: unknown } {
  const out = { status: 0, body: undefined as unknown };
  const reply = {
    status(code: number) {
      out.status = code;
      return this;
    },
    send(body: unknown) {
      out.body = body;
    },
  };
  const host = { switchToHttp: () => ({ getResponse: () => reply }) } as unknown as ArgumentsHost;
  new OpenAiErrorFilter().catch(exception, host);
  return out;
}

describe('OpenAiErrorFilter', () => {
  it('turns a Nest 404 into the OpenAI error shape', () => {
    expect(run(new NotFoundException('Cannot GET /nope'))).toEqual({ status: 404, body: { error: { message: 'Cannot GET /nope', type: 'not_found_error', code: 'route_not_found' } } });
  });
  it('passes an OpenAI-shaped body through with its status', () => {
    const body = { error: { message: 'm', type: 'service_unavailable', code: 'x' } };
    expect(run(new HttpException(body, 503))).toEqual({ status: 503, body });
  });
  it("gives the framework's own client errors the right type and a code naming the problem, not Fastify", () => {
    const tooLarge = Object.assign(new Error('Request body is too large'), { statusCode: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE' });
    expect(run(tooLarge)).toEqual({ status: 413, body: { error: { message: 'Request body is too large', type: 'invalid_request_error', code: 'body_too_large' } } });
    const media = Object.assign(new Error('content-type: text/plain is not accepted'), { statusCode: 415, code: 'unsupported_media_type' });
    expect(run(media).body).toEqual({ error: { message: 'content-type: text/plain is not accepted', type: 'invalid_request_error', code: 'unsupported_media_type' } });
    expect(run(new HttpException('gone away', 503)).body).toEqual({ error: { message: 'gone away', type: 'service_unavailable', code: null } });
  });
  it('answers 500 without the stack for anything else', () => {
    const r = run(new Error('secret detail at /src/file.ts:1'));
    expect(r.status).toBe(500);
    expect(JSON.stringify(r.body)).not.toContain('secret');
  });
});
