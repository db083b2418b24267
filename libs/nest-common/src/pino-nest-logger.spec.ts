import { Logger } from '@nestjs/common';
import pino from 'pino';
import { Writable } from 'node:stream';
import { PinoNestLogger } from './pino-nest-logger';

function capture() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, logger: pino({ level: 'debug', base: { app: 'test' } }, sink) };
}

describe('PinoNestLogger', () => {
  afterEach(() => Logger.overrideLogger(true as never));

  it("routes Nest's static Logger to JSON lines with the context, at pino's levels", () => {
    const { lines, logger } = capture();
    Logger.overrideLogger(new PinoNestLogger(logger));
    new Logger('security').warn('ADMIN_TOKEN is not set');
    new Logger('boot').log('listening');
    new Logger('boot').debug('details');
    Logger.overrideLogger(['warn', 'error']);
    new Logger('boot').log('left out: Nest was told warn and error only');
    new Logger('boot').warn('kept');
    const parsed = lines.map((l) => JSON.parse(l));
    expect(parsed.map((p) => [p.level, p.context, p.msg])).toEqual([
      [40, 'security', 'ADMIN_TOKEN is not set'],
      [30, 'boot', 'listening'],
      [20, 'boot', 'details'],
      [40, 'boot', 'kept'],
    ]);
  });

  it('keeps an error and its stack inside one JSON line', () => {
    const { lines, logger } = capture();
    Logger.overrideLogger(new PinoNestLogger(logger));
    new Logger('errors').error(new Error('boom'));
    new Logger('ExceptionHandler').error('failed', 'Error: failed\n    at x (y.js:1:1)');
    expect(lines).toHaveLength(2);
    const [a, b] = lines.map((l) => JSON.parse(l));
    expect([a.level, a.context, a.msg, a.err.message]).toEqual([50, 'errors', 'boom', 'boom']);
    expect(a.err.stack).toContain('boom');
    expect([b.context, b.msg, b.stack]).toEqual(['ExceptionHandler', 'failed', 'Error: failed\n    at x (y.js:1:1)']);
  });
});
