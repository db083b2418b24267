import { Logger } from '@nestjs/common';
import { ClientRedis } from '@nestjs/microservices';

/**
 * Nest's Redis transport logs every failed reconnect as an error with its stack, and a
 * "Reconnecting" line, once a second per connection for as long as Redis is down. This says
 * when the outage starts and when it ends, once each.
 */
class OutageLog extends Logger {
  private failing = false;

  constructor() {
    super('registry-events');
  }

  override log(message: unknown, ...rest: unknown[]): void {
    if (message === 'Reconnecting to Redis...') return;
    if (this.failing && String(message).startsWith('Connected to Redis')) {
      this.failing = false;
      super.log('registry events connection to Redis back');
      return;
    }
    super.log(message, ...rest);
  }

  override error(message: unknown): void {
    if (!this.failing) super.warn(`registry events connection to Redis lost (${message instanceof Error ? message.message : String(message)}); retrying every second`);
    this.failing = true;
  }
}

/** The Redis transport that carries registry snapshots to the proxies. */
export class RegistryEventsClient extends ClientRedis {
  protected override readonly logger: Logger = new OutageLog();
}
