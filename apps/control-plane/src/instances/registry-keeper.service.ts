import { Inject, Injectable, Logger } from '@nestjs/common';
import { InstanceRecord, InstanceState, recordOf, toInstanceRecord } from '@switchyard/contracts';
import type { DeclaredInstance } from '@switchyard/config';
import type { LoadStore } from '@switchyard/load-store';
import type { ControlPlaneConfig } from '../config';
import { CONTROL_PLANE_CONFIG, DECLARED_INSTANCES, LOAD_STORE } from '../common/tokens';
import { listModels } from '../liveness/probe';

type Registration = Omit<InstanceRecord, 'registered_at'>;

function toRegistration(s: InstanceState): Registration {
  const { registered_at: _r, ...registration } = recordOf(s);
  return registration;
}

/**
 * Remembers every registration this replica knows (declared in config, made through the
 * API, or read from the store), so that a store that comes back empty (Redis restarted
 * without persistence, failover to an empty replica) gets them all back, with their
 * weight, max_inflight and models, within one probe interval.
 */
@Injectable()
export class RegistryKeeperService {
  private readonly logger = new Logger('registry');
  private known = new Map<string, Registration>();
  /** Declared instances whose models could not be read yet (engine still starting): retried every interval. */
  private pending: DeclaredInstance[];

  constructor(
    @Inject(LOAD_STORE) private readonly store: LoadStore,
    @Inject(CONTROL_PLANE_CONFIG) private readonly config: ControlPlaneConfig,
    @Inject(DECLARED_INSTANCES) declared: DeclaredInstance[],
  ) {
    this.pending = [...declared];
  }

  remember(record: Registration): void {
    this.known.set(record.instance_id, record);
  }

  forget(id: string): void {
    this.known.delete(id);
  }

  /**
   * Once per interval on every replica: register declared instances not yet registered;
   * if the store lost its data, register everything known again; otherwise refresh what
   * is known from the store (registrations and removals made through other replicas).
   * Returns the instances read when the store was intact (null after a re-registration).
   */
  async keep(): Promise<InstanceState[] | null> {
    if (this.pending.length) await this.applyDeclared();
    // Read first, then check the marker: if the marker is intact, the read came before any loss.
    const states = await this.store.listInstances();
    if ((await this.store.ensureRegistryMarker()) === 'missing') {
      if (this.known.size === 0) return null;
      for (const record of this.known.values()) await this.store.register(record);
      this.logger.warn(`the store came back empty: registered ${this.known.size} known instances again (${[...this.known.keys()].join(', ')})`);
      return null;
    }
    this.known = new Map(states.map((s) => [s.instance_id, toRegistration(s)]));
    return states;
  }

  private async applyDeclared(): Promise<void> {
    const still: DeclaredInstance[] = [];
    for (const d of this.pending) {
      let models = d.models;
      if (!models) {
        try {
          models = await listModels(d.url, this.config.PROBE_TIMEOUT_S * 1000, d.api_key);
          if (models.length === 0) throw new Error('GET /v1/models: lists no model');
        } catch (err) {
          this.logger.warn(`declared instance ${d.id ?? d.url}: cannot read its models yet (${(err as Error).message}); retrying every ${this.config.PROBE_INTERVAL_S} s`);
          still.push(d);
          continue;
        }
      }
      const { registered_at: _r, ...record } = toInstanceRecord(
        { url: d.url, models, instance_id: d.id, weight: d.weight ?? 1, max_inflight: d.max_inflight, tags: [], meta: { declared: true }, api_key: d.api_key },
        this.config.INSTANCE_TTL_S,
        0,
      );
      const { created } = await this.store.register(record);
      this.remember(record);
      this.logger.log(`${created ? 'registered' : 're-registered'} declared instance ${record.instance_id} at ${record.url} for ${record.models.join(',')}`);
    }
    this.pending = still;
  }
}
