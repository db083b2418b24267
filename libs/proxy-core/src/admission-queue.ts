import type { Affinity } from '@switchyard/load-store';
import type { ExchangeSignal } from './exchange';
import type { SlotResult, Slots } from './slots';

export type QueueOutcome = Exclude<SlotResult, { kind: 'all_full' }> | { kind: 'queue_full' } | { kind: 'queue_timeout' } | { kind: 'gone' };

interface Waiter {
  model: string;
  /** Settled (served, timed out, or its client left). */
  done: boolean;
  affinity?: Affinity;
  /** Instances this request must not get (they do not serve its route). */
  exclude: readonly string[];
  settle: (outcome: QueueOutcome) => void;
}

export interface AdmissionQueueOptions {
  max: number;
  timeoutMs: number;
  /** The ledger the queue asks for slots; it signals freed capacity with `kick()`. */
  slots: Pick<Slots, 'acquire'>;
}

/**
 * Requests that found every instance for their model at max_inflight wait here, FIFO
 * per model and bounded in all, until capacity frees anywhere in the fleet (a kick:
 * a local release, another proxy's release heard over Redis, a registry change, or a
 * short poll while anyone waits).
 */
export class AdmissionQueue {
  private readonly queues = new Map<string, Waiter[]>();
  private size = 0;
  private pumping = false;
  private again = false;
  private poll?: NodeJS.Timeout;
  /** No prototype: a model named `constructor` or `__proto__` is an ordinary key here. */
  private readonly depthByModel: Record<string, number> = Object.create(null);

  constructor(private readonly options: AdmissionQueueOptions) {}

  get length(): number {
    return this.size;
  }

  /** Live depth per model, published in the lease and /metrics. */
  get depth(): Readonly<Record<string, number>> {
    return this.depthByModel;
  }

  waiting(model: string): boolean {
    return (this.queues.get(model)?.length ?? 0) > 0;
  }

  /** Waits for a slot, never on an instance in `exclude`, on its bound instance for a hard affinity; `signal` aborts when the client leaves. */
  wait(model: string, signal: ExchangeSignal, exclude: readonly string[] = [], affinity?: Affinity): Promise<QueueOutcome> {
    if (this.size >= this.options.max) return Promise.resolve({ kind: 'queue_full' });
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined = undefined;
      const waiter: Waiter = {
        model,
        done: false,
        affinity,
        exclude,
        settle: (outcome) => {
          waiter.done = true;
          clearTimeout(timer);
          signal.off('abort', onAbort);
          this.remove(waiter);
          resolve(outcome);
        },
      };
      const onAbort = () => waiter.settle({ kind: 'gone' });
      timer = setTimeout(() => waiter.settle({ kind: 'queue_timeout' }), this.options.timeoutMs);
      signal.once('abort', onAbort);
      const list = this.queues.get(model);
      if (list) list.push(waiter);
      else this.queues.set(model, [waiter]);
      this.size += 1;
      this.depthByModel[model] = (this.depthByModel[model] ?? 0) + 1;
      if (!this.poll) {
        this.poll = setInterval(() => this.kick(), 200);
        this.poll.unref();
      }
      this.kick();
    });
  }

  /** Capacity may have freed: offer it to the heads of the queues. */
  kick(): void {
    if (this.size === 0) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    void this.pump().finally(() => {
      this.pumping = false;
      if (this.again) {
        this.again = false;
        this.kick();
      }
    });
  }

  /** Settles every waiter (drain timeout, shutdown). */
  settleAll(outcome: QueueOutcome): void {
    for (const list of [...this.queues.values()]) for (const w of [...list]) w.settle(outcome);
  }

  /**
   * First come, first served among the waiters the free capacity can serve. A waiter held to some
   * instances (a hard affinity, a route only some serve) that are full does not hold back those
   * behind it; a waiter free to take any instance that finds them all full ends the model's round.
   */
  private async pump(): Promise<void> {
    for (const model of [...this.queues.keys()]) {
      for (const w of [...(this.queues.get(model) ?? [])]) {
        if (w.done) continue;
        let result: SlotResult;
        try {
          result = await this.options.slots.acquire(model, w.exclude, w.affinity);
        } catch {
          return;
        }
        if (result.kind === 'all_full') {
          if (w.affinity?.mode === 'hard' || w.exclude.length > 0) continue;
          break;
        }
        if (w.done) {
          // It left while we acquired for it.
          if (result.kind === 'acquired') result.slot.release();
          continue;
        }
        w.settle(result);
      }
    }
  }

  private remove(waiter: Waiter): void {
    const list = this.queues.get(waiter.model);
    const i = list?.indexOf(waiter) ?? -1;
    if (!list || i < 0) return;
    list.splice(i, 1);
    if (list.length === 0) this.queues.delete(waiter.model);
    this.size -= 1;
    const d = (this.depthByModel[waiter.model] ?? 1) - 1;
    if (d > 0) this.depthByModel[waiter.model] = d;
    else delete this.depthByModel[waiter.model];
    if (this.size === 0 && this.poll) {
      clearInterval(this.poll);
      this.poll = undefined;
    }
  }
}
