import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { LoadStore } from '@switchyard/load-store';
import type { ControlPlaneConfig } from '../config';
import { CONTROL_PLANE_CONFIG, LOAD_STORE } from '../common/tokens';
import { LeadershipService } from '../liveness/leadership.service';
import { ControlPlaneMetrics } from '../metrics/control-plane-metrics';

/**
 * Removes the contributions of proxies whose lease ran out (a SIGKILLed proxy never says
 * goodbye), so their slots vanish from every instance's count within the lease TTL plus one sweep.
 */
@Injectable()
export class LeaseReaperService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('lease-reaper');
  private timer?: NodeJS.Timeout;
  private sweeping = false;
  private failing = false;

  constructor(
    @Inject(LOAD_STORE) private readonly store: LoadStore,
    @Inject(CONTROL_PLANE_CONFIG) private readonly config: ControlPlaneConfig,
    private readonly metrics: ControlPlaneMetrics,
    private readonly leadership: LeadershipService,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.sweep(), this.config.LEASE_SWEEP_S * 1000);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  /** One sweep, by the leading replica only; a failure is logged once until a sweep succeeds again, and the next tick retries. */
  async sweep(): Promise<string[]> {
    // A slow store must not stack sweeps on top of each other; a standby replica leaves reaping to the leader.
    if (this.sweeping || !this.leadership.isLeader) return [];
    this.sweeping = true;
    try {
      const reaped = await this.store.reapExpiredLeases();
      if (this.failing) this.logger.log('lease sweeps succeed again');
      this.failing = false;
      if (reaped.length) {
        this.metrics.leasesReaped.inc(reaped.length);
        this.logger.log(`reaped expired proxy leases: ${reaped.join(', ')}`);
      }
      return reaped;
    } catch (err) {
      this.metrics.storeErrors.inc();
      if (!this.failing) this.logger.warn(`cannot sweep expired proxy leases (retrying every ${this.config.LEASE_SWEEP_S} s): ${(err as Error).message}`);
      this.failing = true;
      return [];
    } finally {
      this.sweeping = false;
    }
  }
}
