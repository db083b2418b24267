import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { LoadStore } from '@switchyard/load-store';
import type { ControlPlaneConfig } from '../config';
import { CONTROL_PLANE_CONFIG, LOAD_STORE } from '../common/tokens';
import { RegistryKeeperService } from '../instances/registry-keeper.service';
import { LeadershipService } from './leadership.service';
import { ProberService } from './prober.service';

/**
 * The control plane's liveness loop, once per PROBE_INTERVAL_S: every replica keeps the
 * registry (declared instances, re-registration after an empty store); the leader alone
 * probes every instance and sweeps the ttl, logging each change of liveness once.
 */
@Injectable()
export class LivenessService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('liveness');
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private failing = false;

  constructor(
    @Inject(LOAD_STORE) private readonly store: LoadStore,
    @Inject(CONTROL_PLANE_CONFIG) private readonly config: ControlPlaneConfig,
    private readonly leadership: LeadershipService,
    private readonly keeper: RegistryKeeperService,
    private readonly prober: ProberService,
  ) {}

  /** The first round runs before the server listens, so declared instances are routable from the first request. */
  async onApplicationBootstrap(): Promise<void> {
    await this.tick();
    this.timer = setInterval(() => void this.tick(), this.config.PROBE_INTERVAL_S * 1000);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  /** One round; a round still running (slow probes) is not stacked on. */
  tick(): Promise<void> {
    this.running ??= this.round().finally(() => (this.running = undefined));
    return this.running;
  }

  private async round(): Promise<void> {
    try {
      const states = await this.keeper.keep();
      if (await this.leadership.claim()) {
        await this.prober.probeAll(states ?? (await this.store.listInstances()));
        for (const id of await this.store.sweepLiveness()) this.logger.warn(`instance ${id} not alive (ttl lapsed: no heartbeat or successful probe for ${this.config.INSTANCE_TTL_S} s)`);
      }
      if (this.failing) this.logger.log('liveness rounds succeed again');
      this.failing = false;
    } catch (err) {
      if (!this.failing) this.logger.warn(`liveness round failed (retrying every ${this.config.PROBE_INTERVAL_S} s): ${(err as Error).message}`);
      this.failing = true;
    }
  }
}
