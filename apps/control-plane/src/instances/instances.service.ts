import { HttpException, Inject, Injectable, Logger } from '@nestjs/common';
import {
  errorBody,
  heartbeatIntervalS,
  Heartbeat,
  InstanceView,
  ParsedInstanceRegistration,
  RegistrationResponse,
  toInstanceRecord,
  toInstanceView,
} from '@switchyard/contracts';
import type { LoadStore } from '@switchyard/load-store';
import type { ControlPlaneConfig } from '../config';
import { CONTROL_PLANE_CONFIG, LOAD_STORE } from '../common/tokens';
import { RegistryEventsService } from '../events/registry-events.service';

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
  ) {}

  async register(reg: ParsedInstanceRegistration): Promise<RegistrationResponse> {
    const ttl = this.config.INSTANCE_TTL_S;
    const { registered_at: _r, ...record } = toInstanceRecord(reg, ttl, 0);
    const { created } = await this.store.register(record);
    void this.events.publish();
    this.logger.log(`${created ? 'registered' : 're-registered'} ${record.instance_id} at ${record.url} for ${record.models.join(',')}`);
    return { instance_id: record.instance_id, heartbeat_interval_s: heartbeatIntervalS(ttl), ttl_s: ttl };
  }

  async heartbeat(id: string, hb: Heartbeat): Promise<void> {
    if ((await this.store.heartbeat(id, hb)) === 'unknown') throw notFound(id);
  }

  /** Old agents still send their own in-flight count: ignored, with one warning per instance. */
  warnLegacyInflight(id: string): void {
    if (this.warnedLegacyInflight.has(id)) return;
    this.warnedLegacyInflight.add(id);
    this.logger.warn(`instance ${id} sends inflight in heartbeats; ignored: in-flight is counted by the proxies`);
  }

  async remove(id: string): Promise<void> {
    if (!(await this.store.remove(id))) throw notFound(id);
    void this.events.publish();
  }

  async list(includeDead: boolean): Promise<InstanceView[]> {
    const all = await this.store.listInstances();
    return all.filter((s) => includeDead || s.is_alive).map(toInstanceView);
  }

  async get(id: string): Promise<InstanceView> {
    const s = await this.store.getInstance(id);
    if (!s) throw notFound(id);
    return toInstanceView(s);
  }
}
