import type { LoggerService, LogLevel } from '@nestjs/common';
import type { Logger } from 'pino';

/**
 * Nest's own logger (bootstrap, exception filter, `new Logger(ctx)`) written through pino, so a
 * server prints only JSON lines: Nest's ConsoleLogger would add ANSI-coloured plain text.
 * A line is written when both Nest's levels (`logger: ['warn', 'error']`) and pino's level allow it.
 */
export class PinoNestLogger implements LoggerService {
  private levels?: ReadonlySet<LogLevel>;

  constructor(private readonly pino: Logger) {}

  log(message: unknown, ...params: unknown[]) {
    if (this.allows('log')) this.write('info', message, params);
  }
  warn(message: unknown, ...params: unknown[]) {
    if (this.allows('warn')) this.write('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]) {
    if (this.allows('debug')) this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]) {
    if (this.allows('verbose')) this.write('trace', message, params);
  }
  fatal(message: unknown, ...params: unknown[]) {
    if (this.allows('fatal')) this.write('fatal', message, params);
  }
  /** Nest passes `(message, stack?, context?)`; the stack goes into the JSON, not onto a line of its own. */
  error(message: unknown, ...params: unknown[]) {
    if (!this.allows('error')) return;
    const context = params.length > 1 || (params.length === 1 && !looksLikeStack(params[0])) ? params.pop() : undefined;
    const stack = params.find(looksLikeStack);
    const fields = { ...(typeof context === 'string' ? { context } : {}), ...(stack ? { stack } : {}) };
    if (message instanceof Error) this.pino.error({ ...fields, err: message }, message.message);
    else this.pino.error(fields, String(message));
  }
  setLogLevels(levels: LogLevel[]) {
    this.levels = new Set(levels);
  }

  private allows(level: LogLevel): boolean {
    return !this.levels || this.levels.has(level);
  }

  private write(level: 'info' | 'warn' | 'debug' | 'trace' | 'fatal', message: unknown, params: unknown[]) {
    const context = typeof params[params.length - 1] === 'string' ? (params[params.length - 1] as string) : undefined;
    const fields = context ? { context } : {};
    if (message instanceof Error) this.pino[level]({ ...fields, err: message }, message.message);
    else if (typeof message === 'object' && message !== null) this.pino[level]({ ...fields, ...message });
    else this.pino[level](fields, String(message));
  }
}

function looksLikeStack(v: unknown): v is string {
  return typeof v === 'string' && /\n\s+at /.test(v);
}
