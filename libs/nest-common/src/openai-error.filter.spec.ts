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
    expect(run(new NotFoundException('Cannot GET /nope'))).toEqual({ status: 404, body: { error: { message: 'Cannot GET /nope', type: 'not_found_error', code: null } } });
  });
  it('passes an OpenAI-shaped body through with its status', () => {
    const body = { error: { message: 'm', type: 'service_unavailable', code: 'x' } };
    expect(run(new HttpException(body, 503))).toEqual({ status: 503, body });
  });
  it('answers 500 without the stack for anything else', () => {
    const r = run(new Error('secret detail at /src/file.ts:1'));
    expect(r.status).toBe(500);
    expect(JSON.stringify(r.body)).not.toContain('secret');
  });
});
