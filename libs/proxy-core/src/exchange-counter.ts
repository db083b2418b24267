import type http from 'node:http';

/**
 * Open HTTP exchanges on every route, taken at the server's edge before any handler
 * and given back when the response body has ended or the client abandoned it
 * ('close' fires on both), not when a handler returns. Drain waits on this.
 */
export class ExchangeCounter {
  private count = 0;

  get open(): number {
    return this.count;
  }

  track(res: http.ServerResponse): void {
    this.count += 1;
    res.once('close', () => (this.count -= 1));
  }
}
