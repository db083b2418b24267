import { EventEmitter } from 'node:events';
import type http from 'node:http';
import type { Socket } from 'node:net';

/**
 * An exchange's abort signal: an EventEmitter with `aborted` and `reason`, which undici takes
 * as a request's signal. Cheaper than an AbortController per exchange (profiled: the
 * EventTarget machinery of one, made and torn down per request, was ~2% of the proxy's time).
 */
export class ExchangeSignal extends EventEmitter {
  aborted = false;
  reason: Error | undefined = undefined;

  abort(reason: Error): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

/** A request's claim on one instance: taken from the Slots ledger, given back by `release()`, which is idempotent. */
export interface Slot {
  readonly instanceId: string;
  readonly url: string;
  /** 'hit' when the request's affinity key sent it to its bound instance, 'gone' when that instance could not serve. */
  readonly affinity?: 'hit' | 'gone';
  release(): void;
  /** Binds a key (the response id this instance answered with) to the instance, in the same store call as the release. */
  bind?(key: string): void;
}

/** nginx's "client closed request": the client left before the response ended. */
export const CLIENT_GONE = 499;

/**
 * One HTTP exchange, from the request's arrival until its response has ended or its
 * client has left, whichever comes first. Its single end handler aborts the upstream
 * call first (if the response did not finish), then releases the slot it holds, then
 * hands over to `onEnd` (metrics, access log): so "exactly once" and "abort before
 * release" hold by construction, on every path.
 */
export class Exchange {
  readonly startedAt = performance.now();
  model: string | null = null;
  instanceId: string | null = null;
  /** The route forwarded (`/v1/chat/completions`, …); null for the shell's own routes. */
  route: string | null = null;
  /** Token counts from the answer's `usage` (whole body or a stream's usage chunk); null while unknown. */
  usage: { prompt_tokens: number; completion_tokens: number } | null = null;
  /** performance.now() when the client was sent the first data event (stream) or the whole body; null before. */
  firstTokenAt: number | null = null;
  /** Time spent waiting in the admission queue, in ms (0 when admitted at once). */
  queueWaitMs = 0;
  /** Attempts made (1 when the first instance answered). */
  attempts = 0;
  private done = false;
  private slot?: Slot;
  private controller?: ExchangeSignal;

  constructor(
    readonly req: http.IncomingMessage,
    readonly res: http.ServerResponse,
    private readonly onEnd: (exchange: Exchange) => void,
  ) {}

  get ended(): boolean {
    return this.done;
  }

  /** The response reached its end (as far as node can tell: handed to the socket). */
  get complete(): boolean {
    return this.res.writableFinished;
  }

  /** The status as logged and counted: the response's own, or 499 when the client left first. */
  get status(): number {
    return this.complete ? this.res.statusCode : CLIENT_GONE;
  }

  /** Aborts when the client leaves; made only for exchanges that need one, already aborted if asked for after that. */
  get signal(): ExchangeSignal {
    if (!this.controller) {
      this.controller = new ExchangeSignal();
      if (this.done && !this.complete) this.controller.abort(new Error('the client left'));
    }
    return this.controller;
  }

  /**
   * Resolves true once this response may be written: at once, or for a pipelined
   * request when the responses before it on the connection are done (node queues it
   * without a socket until then); false if the exchange ended first. A pipelined
   * request takes no slot while it could not send a byte.
   */
  turn(): Promise<boolean> | boolean {
    if (this.done) return false;
    if (this.res.socket) return true;
    return new Promise((resolve) => {
      this.res.once('socket', () => resolve(!this.done));
      this.signal.once('abort', () => resolve(false));
    });
  }

  /** Takes a slot for this exchange; if the exchange has already ended, the slot goes back at once. */
  hold(slot: Slot): void {
    this.slot = slot;
    this.instanceId = slot.instanceId;
    if (this.done) this.releaseSlot();
  }

  /** Gives the slot back early: the instance is done (body end, failed attempt) before the client is. */
  releaseSlot(): void {
    const slot = this.slot;
    this.slot = undefined;
    slot?.release();
  }

  /** Ends the upstream call (drain timeout); the exchange itself ends when its response does. */
  abortUpstream(reason: Error): void {
    this.controller?.abort(reason);
  }

  /** The one end handler: abort upstream, release the slot, then metrics and log. Idempotent. */
  end(): void {
    if (this.done) return;
    this.done = true;
    if (!this.complete) this.controller?.abort(new Error('the client left'));
    this.releaseSlot();
    this.onEnd(this);
  }
}

const OPEN = Symbol('open exchanges');
type TrackedSocket = Socket & { [OPEN]?: Set<Exchange> };

/**
 * Every open HTTP exchange, on every route, taken at the server's edge before any handler.
 * An exchange ends on its response's 'close' or its socket's, whichever is first: a
 * pipelined response still queued behind another never gets a 'close' of its own.
 * Drain waits on `open`.
 */
export class Exchanges {
  private count = 0;
  readonly all = new Set<Exchange>();

  get open(): number {
    return this.count;
  }

  begin(req: http.IncomingMessage, res: http.ServerResponse, onEnd: (exchange: Exchange) => void): Exchange {
    const socket = req.socket as TrackedSocket;
    let onSocket = socket[OPEN];
    if (!onSocket) {
      // One listener per connection, not per request: a pipelined burst would pile them up.
      const set = (onSocket = socket[OPEN] = new Set());
      socket.once('close', () => {
        for (const ex of set) ex.end();
      });
    }
    const exchange = new Exchange(req, res, (ex) => {
      this.count -= 1;
      this.all.delete(ex);
      onSocket.delete(ex);
      onEnd(ex);
    });
    this.count += 1;
    this.all.add(exchange);
    onSocket.add(exchange);
    res.once('close', () => exchange.end());
    return exchange;
  }
}
