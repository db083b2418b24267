import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { errorBody, ErrorType } from '@switchyard/contracts';
import type { FastifyReply } from 'fastify';

const TYPE_BY_STATUS: Record<number, ErrorType> = {
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  429: 'rate_limit_error',
  503: 'service_unavailable',
  504: 'timeout_error',
};

/** Codes for the errors the framework raises itself (no route, bad or empty JSON, body too large, wrong content type). */
const CODE_BY_STATUS: Record<number, string> = {
  400: 'invalid_body',
  404: 'route_not_found',
  405: 'method_not_allowed',
  413: 'body_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
};

const typeFor = (status: number): ErrorType => TYPE_BY_STATUS[status] ?? (status < 500 ? 'invalid_request_error' : 'server_error');

/** Every error leaves as the OpenAI error shape; never a stack trace. */
@Catch()
export class OpenAiErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const res = exception.getResponse();
      // Nest's own exceptions carry `error: "Not Found"` (a string); only an OpenAI-shaped body passes through.
      if (typeof res === 'object' && res !== null && typeof (res as { error?: unknown }).error === 'object') {
        void reply.status(status).send(res);
        return;
      }
      const message = typeof res === 'string' ? res : String((res as { message?: unknown }).message ?? exception.message);
      void reply.status(status).send(errorBody(message, typeFor(status), CODE_BY_STATUS[status] ?? null));
      return;
    }
    // Fastify's errors (body parsing, limits) carry a statusCode; their own code names Fastify, not the problem.
    const err = exception as { statusCode?: number; code?: unknown; message?: string };
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      const code = typeof err.code === 'string' && !err.code.startsWith('FST_') ? err.code : (CODE_BY_STATUS[err.statusCode] ?? null);
      void reply.status(err.statusCode).send(errorBody(String(err.message), typeFor(err.statusCode), code));
      return;
    }
    this.logger.error(exception);
    void reply.status(500).send(errorBody('internal error', 'server_error', null));
  }
}
