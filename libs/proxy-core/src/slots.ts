import type { AcquireResult, Affinity, AffinityBinding, BatchAnswer, BatchOp, LoadStore } from '@switchyard/load-store';
import { pick, Strategy } from '@switchyard/routing';
import type { Slot } from './exchange';
import type { RegistryCache } from './registry-cache';

export type Refusal = Exclude<AcquireResult, { kind: 'acquired' }>;
export type SlotResult = { kind: 'acquired'; slot: Slot } | Refusal;

export interface SlotsOptions {
  store: LoadStore;
  registry: RegistryCache;
  proxyId: string;
  strategy: Strategy;
  /** How long an instance that could not be reached is avoided; 0 disables. */
  cooldownMs: number;
  /** How long a response id stays bound to the instance that answered it (see Slot.bind); 0: never bound. */
  affinityTtlMs: number;
  /** A store call failed; `first` when it starts an outage (the ledger is now degraded). */
  onStoreError?: (err: unknown, first: boolean) => void;
  now?: () => number;
  random?: () => number;
}

/** No instance excluded: one shared empty list, not one per request. */
export const NO_EXCLUDE: readonly string[] = [];

interface BatchItem {
  op: BatchOp;
  resolve: (answer: BatchAnswer) => void;
  reject: (err: unknown) => void;
}
/** What the ledger sends to the store, in order: an acquire or release, or another call. */
type Outgoing = BatchItem | { call: () => void };

/**
 * The one home of this proxy's claims on instances (invariants 1, 4, 5, 7): local counts
 * per instance, the store's atomic select-and-acquire, the pending-acquire guard that
 * keeps a reconcile from erasing a slot the store has counted but this proxy has not yet
 * heard of, the local pick while the store is unreachable, cool-downs, reconcile, and
 * the capacity-freed signal. Framework-free; clock and randomness injectable.
 */
export class Slots {
  private readonly counts = new Map<string, number>();
  private readonly cooling = new Map<string, number>();
  private readonly listeners: (() => void)[] = [];
  /** Store acquires sent and not yet answered. */
  private pending = 0;
  private ticket = 0;
  private outbox: Outgoing[] = [];
  private isDegraded = false;
  lastStoreError = '';
  private readonly now: () => number;
  private readonly random: () => number;

  constructor(private readonly options: SlotsOptions) {
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
  }

  /** True while the store is unreachable: picks are local, over this proxy's own counts. */
  get degraded(): boolean {
    return this.isDegraded;
  }

  get view(): ReadonlyMap<string, number> {
    return this.counts;
  }

  get total(): number {
    let sum = 0;
    for (const n of this.counts.values()) sum += n;
    return sum;
  }

  /**
   * Selects and takes a slot for the model, avoiding `tried` and (while anything else is left) instances
   * cooling down; with an affinity, its bound instance first (see Affinity in the store).
   */
  async acquire(model: string, tried: readonly string[] = NO_EXCLUDE, affinity?: Affinity): Promise<SlotResult> {
    const exclude = this.excluded(tried);
    let result = await this.select(model, exclude, affinity);
    // Cooling down is a preference, not a wall: with nothing else left, try them again.
    if (result.kind !== 'acquired' && result.kind !== 'unknown_model' && exclude.length > tried.length) result = await this.select(model, tried, affinity);
    return result;
  }

  /** Capacity may have freed (a release here or elsewhere, a registry change). */
  onCapacity(listener: () => void): void {
    this.listeners.push(listener);
  }

  capacityFreed(): void {
    for (const l of this.listeners) l();
  }

  /** An instance could not be reached: avoid it for a while. */
  coolDown(instanceId: string): void {
    if (this.options.cooldownMs > 0) this.cooling.set(instanceId, this.now() + this.options.cooldownMs);
  }

  storeFailed(err: unknown): void {
    this.lastStoreError = (err as Error)?.message ?? String(err);
    const first = !this.isDegraded;
    this.isDegraded = true;
    this.options.onStoreError?.(err, first);
  }

  /** The store answered (lease renewal, the store probe); true when that ends an outage, and the caller should reconcile. */
  storeAnswered(): boolean {
    if (!this.isDegraded) return false;
    this.isDegraded = false;
    return true;
  }

  /** Rewrites this proxy's shared contribution from its local counts, so a lost release heals. */
  async reconcile(): Promise<void> {
    // An acquire still awaiting its answer has counted in the store but not yet here; a
    // rewrite sent now would erase it. Wait briefly for a quiet moment, then go anyway.
    for (let i = 0; i < 25 && this.pending > 0; i++) await new Promise((r) => setTimeout(r, 20));
    if (this.isDegraded) return;
    // Counts taken now, sent in turn: releases queued before it go first, later ones after, so none is counted twice.
    const counts = Object.fromEntries(this.counts);
    await this.send(() => this.options.store.reconcile(this.options.proxyId, counts)).catch((err) => this.storeFailed(err));
  }

  private async select(model: string, exclude: readonly string[], affinity?: Affinity): Promise<SlotResult> {
    if (!this.isDegraded) {
      this.pending += 1;
      let answer: AcquireResult | undefined;
      const request = { proxyId: this.options.proxyId, model, strategy: this.options.strategy, exclude, ...(affinity ? { affinity } : {}) };
      try {
        answer = (await this.sendOp({ kind: 'acquire', request })) as AcquireResult;
      } catch (err) {
        this.storeFailed(err);
      }
      try {
        // Counted here in the same tick the answer arrived, before the guard drops.
        if (answer) return answer.kind === 'acquired' ? this.take(answer.instance_id, answer.url, answer.affinity) : answer;
      } finally {
        this.pending -= 1;
      }
    }
    return this.localSelect(model, exclude);
  }

  /**
   * Store calls go out in order, all of one event-loop turn together (setImmediate): with
   * the store's auto-pipelining they share one write and one read, where each used to
   * cost a syscall of its own (profiled: the largest cost after the HTTP writes); and the
   * acquires and releases among them go as one batch, one script call instead of one each.
   */
  private send<T>(call: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.outbox.push({ call: () => call().then(resolve, reject) }) === 1) setImmediate(this.flush);
    });
  }

  /** An acquire or release: with a store that batches, those of one turn share one script call (see LoadStore.batch). */
  private sendOp(op: BatchOp): Promise<BatchAnswer> {
    return new Promise<BatchAnswer>((resolve, reject) => {
      if (this.outbox.push({ op, resolve, reject }) === 1) setImmediate(this.flush);
    });
  }

  private readonly flush = (): void => {
    const out = this.outbox;
    this.outbox = [];
    const { store, proxyId } = this.options;
    let run: BatchItem[] = [];
    const sendRun = () => {
      if (run.length === 0) return;
      const items = run;
      run = [];
      if (items.length === 1 || !store.batch) {
        for (const it of items) (it.op.kind === 'acquire' ? store.acquire(it.op.request) : store.release(proxyId, it.op.instanceId, it.op.bind)).then(it.resolve, it.reject);
        return;
      }
      store.batch(proxyId, items.map((it) => it.op)).then(
        (answers) => items.forEach((it, i) => it.resolve(answers[i])),
        (err) => items.forEach((it) => it.reject(err)),
      );
    };
    for (const item of out) {
      if ('op' in item) run.push(item);
      else {
        // Anything else (a reconcile) keeps its place: the ops before it go first.
        sendRun();
        item.call();
      }
    }
    sendRun();
  };

  private localSelect(model: string, exclude: readonly string[]): SlotResult {
    const { registry, strategy } = this.options;
    if (!registry.hasModel(model)) return { kind: 'unknown_model' };
    const outcome = pick(strategy, registry.candidates(model, this.counts, exclude), { ticket: this.ticket++, rand1: this.random(), rand2: this.random() });
    if (outcome.kind !== 'picked') return outcome;
    return this.take(outcome.instance_id, registry.get(outcome.instance_id)?.url ?? '');
  }

  private take(instanceId: string, url: string, affinity?: 'hit' | 'gone'): SlotResult {
    this.counts.set(instanceId, (this.counts.get(instanceId) ?? 0) + 1);
    let held = true;
    let bound: AffinityBinding | undefined;
    const bind = (key: string) => {
      if (held && this.options.affinityTtlMs > 0) bound = { key, ttlMs: this.options.affinityTtlMs };
    };
    const release = () => {
      if (!held) return;
      held = false;
      const n = (this.counts.get(instanceId) ?? 0) - 1;
      if (n > 0) this.counts.set(instanceId, n);
      else this.counts.delete(instanceId);
      // While degraded the store has lost track anyway; the reconcile after the outage rewrites this proxy's share.
      if (this.isDegraded) return this.capacityFreed();
      this.sendOp({ kind: 'release', instanceId, ...(bound ? { bind: bound } : {}) }).then(
        () => this.capacityFreed(),
        (err) => this.storeFailed(err),
      );
    };
    return { kind: 'acquired', slot: { instanceId, url, affinity, release, bind } };
  }

  private excluded(tried: readonly string[]): readonly string[] {
    if (this.cooling.size === 0) return tried;
    const now = this.now();
    const out = tried.slice();
    for (const [id, until] of this.cooling) {
      if (until <= now) this.cooling.delete(id);
      else if (!out.includes(id)) out.push(id);
    }
    return out;
  }
}
