/**
 * Continuous batching as a model server does it: at most maxBatch sequences
 * decode at once, the rest wait in FIFO order; a finished sequence frees its
 * slot for the next waiter immediately.
 */
export class Batcher {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly maxBatch: number) {}

  get running(): number {
    return this.active;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** Resolves when a slot is held; the returned function gives it back (once). */
  async admit(signal: AbortSignal): Promise<() => void> {
    if (this.active < this.maxBatch) {
      this.active += 1;
    } else {
      await new Promise<void>((resolve, reject) => {
        const wake = () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = () => {
          const i = this.waiting.indexOf(wake);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(new Error('aborted while queued'));
        };
        signal.addEventListener('abort', onAbort, { once: true });
        this.waiting.push(wake);
      });
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.active -= 1;
    };
  }
}
