/** This proxy's own in-flight requests per instance: its local truth, from which it rewrites its shared contribution. */
export class LocalCounts {
  private readonly counts = new Map<string, number>();

  inc(instanceId: string): void {
    this.counts.set(instanceId, (this.counts.get(instanceId) ?? 0) + 1);
  }

  dec(instanceId: string): void {
    const n = (this.counts.get(instanceId) ?? 0) - 1;
    if (n > 0) this.counts.set(instanceId, n);
    else this.counts.delete(instanceId);
  }

  get view(): ReadonlyMap<string, number> {
    return this.counts;
  }

  toRecord(): Record<string, number> {
    return Object.fromEntries(this.counts);
  }

  get total(): number {
    let sum = 0;
    for (const n of this.counts.values()) sum += n;
    return sum;
  }
}
