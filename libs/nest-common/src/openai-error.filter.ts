import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { errorBody, ErrorType } from '@switchyard/contracts';
import type { FastifyReply } from 'fastify';

const TYPE_BY_STATUS: Record<number, ErrorType> = { 400: 'invalid_request_error', 401: 'authentication_error', 404: 'not_found_error', 413: 'invalid_request_error' };

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
      void reply.status(status).send(errorBody(message, TYPE_BY_STATUS[status] ?? 'server_error', null));
      return;
    }
    const status = (exception as { statusCode?: number }).statusCode;
    if (status && status >= 400 && status < 500) {
      void reply.status(status).send(errorBody((exception as Error).message, 'invalid_request_error', null));
      return;
    }
    this.logger.error(exception);
    void reply.status(500).send(errorBody('internal error', 'server_error', null));
  }
}
