import { HttpException, Inject, Injectable, Logger } from '@nestjs/common';
import {
  errorBody,
  heartbeatIntervalS,
  Heartbeat,
  InstanceView,
  ModelInfo,
  ParsedInstanceRegistration,
  RegistrationResponse,
  toInstanceRecord,
  toInstanceView,
} from '@switchyard/contracts';
import { DEFAULT_POOL, LoadStore, PoolConflictError } from '@switchyard/load-store';
import type { ControlPlaneConfig } from '../config';
import { StoreOutage } from '../common/store-outage';
import { CONTROL_PLANE_CONFIG, LOAD_STORE } from '../common/tokens';
import { RegistryEventsService } from '../events/registry-events.service';
import { probeHealth, readModels } from '../liveness/probe';
import { RegistryKeeperService } from './registry-keeper.service';

export const notFound = (id: string) =>
  new HttpException(errorBody(`instance '${id}' is not registered; register it again`, 'not_found_error', 'instance_not_found'), 404);

@Injectable()
export class InstancesService {
  private readonly logger = new Logger('instances');
  private readonly warnedLegacyInflight = new Set<string>();

  constructor(
    @Inject(LOAD_STORE) private readonly store: LoadStore,
    @Inject(CONTROL_PLANE_CONFIG) private readonly config: ControlPlaneConfig,
    private readonly events: RegistryEventsService,
    private readonly keeper: RegistryKeeperService,
    private readonly outage: StoreOutage,
  ) {}

  async register(reg: ParsedInstanceRegistration): Promise<RegistrationResponse> {
    const ttl = this.config.INSTANCE_TTL_S;
    const { registered_at: _r, ...record } = toInstanceRecord(reg, ttl, 0);
    if (reg.pool !== undefined && reg.pool !== DEFAULT_POOL && !this.config.REDIS_CLUSTER) {
      throw new HttpException(errorBody(`pool: '${reg.pool}' needs REDIS_CLUSTER=true (one Redis serves the one pool '${DEFAULT_POOL}')`, 'invalid_request_error', 'invalid_field', 'pool'), 400);
    }
    if (reg.probe_now) {
      const served = await this.probeBeforeRegistering(record.url, record.models, record.api_key);
      const info: Record<string, ModelInfo> = Object.create(null);
      for (const m of record.models) info[m] = served[m];
      Object.assign(record, { model_info: info, model_info_at: Date.now() });
    }
    // A model lives in one pool: a registration that would put it in a second one changes nothing (409), and is no outage.
    const result = await this.outage.call(() => this.store.register(record).catch((err: unknown) => (err instanceof PoolConflictError ? err : Promise.reject(err))));
    if (result instanceof PoolConflictError) throw new HttpException(errorBody(result.message, 'invalid_request_error', 'pool_conflict', 'pool'), 409);
    const { created } = result;
    this.keeper.remember(record);
    void this.events.publish();
    this.logger.log(`${created ? 'registered' : 're-registered'} ${record.instance_id} at ${record.url} for ${record.models.join(',')}`);
    return { instance_id: record.instance_id, heartbeat_interval_s: heartbeatIntervalS(ttl), ttl_s: ttl };
  }

  /** `probe_now`: the URL must answer a probe and list every model being registered; 422 naming the reason otherwise. */
  private async probeBeforeRegistering(url: string, models: readonly string[], apiKey: string | undefined): Promise<Record<string, ModelInfo>> {
    const unprocessable = (message: string, param: string) => new HttpException(errorBody(message, 'invalid_request_error', 'probe_failed', param), 422);
    const timeoutMs = this.config.PROBE_TIMEOUT_S * 1000;
    const health = await probeHealth(url, timeoutMs, '/health', apiKey);
    if (!health.ok) throw unprocessable(`url: ${url} cannot be reached: ${health.reason}`, 'url');
    let served: Record<string, ModelInfo>;
    try {
      served = await readModels(url, timeoutMs, apiKey);
    } catch (err) {
      throw unprocessable(`models: cannot read the models served at ${url}: ${(err as Error).message}`, 'models');
    }
    const missing = models.filter((m) => !Object.hasOwn(served, m));
    if (missing.length) throw unprocessable(`models: ${missing.join(', ')} not listed by ${url}/v1/models (it lists: ${Object.keys(served).join(', ') || 'nothing'})`, 'models');
    return served;
  }

  async heartbeat(id: string, hb: Heartbeat): Promise<void> {
    const result = await this.outage.call(() => this.store.heartbeat(id, hb));
    if (result === 'unknown') throw notFound(id);
    if (result === 'revived') this.logger.log(`instance ${id} alive (heartbeat resumed)`);
  }

  /** Old agents still send their own in-flight count: ignored, with one warning per instance. */
  warnLegacyInflight(id: string): void {
    if (this.warnedLegacyInflight.has(id)) return;
    this.warnedLegacyInflight.add(id);
    this.logger.warn(`instance ${id} sends inflight in heartbeats; ignored: in-flight is counted by the proxies`);
  }

  async remove(id: string): Promise<void> {
    if (!(await this.outage.call(() => this.store.remove(id)))) throw notFound(id);
    this.keeper.forget(id);
    void this.events.publish();
  }

  async list(includeExpired: boolean): Promise<InstanceView[]> {
    const all = await this.outage.call(() => this.store.listInstances());
    return all.filter((s) => includeExpired || s.is_alive).map(toInstanceView);
  }

  async get(id: string): Promise<InstanceView> {
    const s = await this.outage.call(() => this.store.getInstance(id));
    if (!s) throw notFound(id);
    return toInstanceView(s);
  }
}
