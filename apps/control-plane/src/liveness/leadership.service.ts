import { hostname } from 'node:os';
import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { LoadStore } from '@switchyard/load-store';
import { LOAD_STORE } from '../common/tokens';

/** How often a replica claims or renews; the lease outlives three missed renewals. */
export const LEADERSHIP_RENEW_MS = 1000;
export const LEADERSHIP_TTL_MS = 4000;

/**
 * One control-plane replica at a time probes, sweeps liveness and reaps: the holder of the
 * control plane's lease in the store. The lease is also what proxies read to learn that no
 * control plane is refreshing liveness (then they keep the last liveness). When the holder
 * dies, another replica takes over within LEADERSHIP_TTL_MS.
 */
@Injectable()
export class LeadershipService implements OnModuleInit, OnApplicationShutdown {
  readonly replicaId = `${hostname()}:${process.pid}@${Date.now().toString(36)}`;
  private readonly logger = new Logger('leadership');
  private timer?: NodeJS.Timeout;
  private leader = false;
  private claiming?: Promise<boolean>;

  constructor(@Inject(LOAD_STORE) private readonly store: LoadStore) {}

  get isLeader(): boolean {
    return this.leader;
  }

  onModuleInit(): void {
    void this.claim();
    this.timer = setInterval(() => void this.claim(), LEADERSHIP_RENEW_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  /** Claims or renews; a store failure means not leading until the store answers again. */
  claim(): Promise<boolean> {
    this.claiming ??= this.store
      .claimControlPlane(this.replicaId, LEADERSHIP_TTL_MS, LEADERSHIP_RENEW_MS)
      .catch(() => false)
      .then((leader: boolean) => {
        if (leader !== this.leader) this.logger.log(leader ? `replica ${this.replicaId} now probes, sweeps liveness and reaps leases` : `replica ${this.replicaId} stands by`);
        this.leader = leader;
        return leader;
      })
      .finally(() => (this.claiming = undefined));
    return this.claiming as Promise<boolean>;
  }
}
