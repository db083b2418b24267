import { Inject, Injectable, Logger } from '@nestjs/common';
import { EngineSignals, InstanceState, ModelInfo, recordOf } from '@switchyard/contracts';
import { parseEngineMetrics } from '@switchyard/engines';
import type { LoadStore } from '@switchyard/load-store';
import type { ControlPlaneConfig } from '../config';
import { CONTROL_PLANE_CONFIG, LOAD_STORE } from '../common/tokens';
import { boundedGet, HealthPath, MAX_SCRAPE_BYTES, probeHealth, readModels } from './probe';

/** Probes under way at once: a large fleet is probed in waves, never all sockets at once. */
const PROBE_CONCURRENCY = 32;
/** Failed probes in a row that take an instance out at once, without waiting for its ttl. */
export const FAILED_PROBES_TO_MARK_DOWN = 2;
/** How old what /v1/models said (max_model_len, owned_by) may get before a successful probe reads it again. */
export const MODEL_INFO_MAX_AGE_MS = 5 * 60_000;

/**
 * Active probes of every registered instance: `/health` (or `/v1/models`) keeps it alive
 * like a heartbeat; two failures in a row take it out at once, unless heartbeats keep
 * arriving meanwhile (an agent that heartbeats is believed over its URL); `/metrics` is
 * scraped into the instance's engine signals. Called by the leader replica only.
 */
@Injectable()
export class ProberService {
  private readonly logger = new Logger('prober');
  private readonly failures = new Map<string, number>();
  /** last_seen_at at the previous failed probe: if it moved since, something else (heartbeats) keeps the instance alive. */
  private readonly seenAtFailure = new Map<string, number>();
  private readonly healthPath = new Map<string, HealthPath>();

  constructor(
    @Inject(LOAD_STORE) private readonly store: LoadStore,
    @Inject(CONTROL_PLANE_CONFIG) private readonly config: ControlPlaneConfig,
  ) {}

  /** Probes every instance once, PROBE_CONCURRENCY at a time. */
  async probeAll(instances: readonly InstanceState[]): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < instances.length) await this.probe(instances[next++]);
    };
    await Promise.all(Array.from({ length: Math.min(PROBE_CONCURRENCY, instances.length) }, worker));
    // Forget instances that are gone, so the maps do not grow with churn.
    const ids = new Set(instances.map((s) => s.instance_id));
    for (const map of [this.failures, this.seenAtFailure, this.healthPath]) for (const id of map.keys()) if (!ids.has(id)) map.delete(id);
  }

  async probe(s: InstanceState): Promise<void> {
    const id = s.instance_id;
    const health = await probeHealth(s.url, this.config.PROBE_TIMEOUT_S * 1000, this.healthPath.get(id), s.api_key);
    try {
      if (health.ok) {
        this.healthPath.set(id, health.path);
        this.failures.delete(id);
        this.seenAtFailure.delete(id);
        const beat = await this.store.heartbeat(id, {});
        if (beat === 'unknown') return;
        if (beat === 'revived') this.logger.log(`instance ${id} alive (probe recovered: GET ${health.path} answered)`);
        await this.scrape(s);
        if (s.model_info_at === undefined || Date.now() - s.model_info_at > MODEL_INFO_MAX_AGE_MS) await this.readModelInfo(s);
        return;
      }
      const failed = (this.failures.get(id) ?? 0) + 1;
      this.failures.set(id, failed);
      const seenBefore = this.seenAtFailure.get(id);
      this.seenAtFailure.set(id, s.last_seen_at);
      if (failed < FAILED_PROBES_TO_MARK_DOWN) return;
      if (seenBefore !== undefined && s.last_seen_at > seenBefore) return;
      if ((await this.store.markDown(id)) === 'was_alive') this.logger.warn(`instance ${id} not alive (probes failed: ${health.reason})`);
    } catch (err) {
      this.logger.warn(`cannot record the probe of ${id}: ${(err as Error).message}`);
    }
  }

  /** Reads /metrics into engine signals; a page that cannot be used keeps the last signals and says why in scrape_error. */
  private async scrape(s: InstanceState): Promise<void> {
    const previous = s.engine;
    let signals: EngineSignals;
    try {
      const r = await boundedGet(`${s.url}/metrics`, this.config.PROBE_TIMEOUT_S * 1000, MAX_SCRAPE_BYTES, s.api_key);
      // No /metrics at all: nothing to learn, and nothing wrong.
      if (r.status === 404) return;
      if (r.status < 200 || r.status >= 300) throw new Error(`status ${r.status}`);
      signals = { ...parseEngineMetrics(r.body, s.models), scraped_at: Date.now(), scrape_error: null };
    } catch (err) {
      signals = { ...previous, scrape_error: `GET /metrics: ${(err as Error).message}`.slice(0, 300) };
    }
    await this.store.reportEngine(s.instance_id, signals, this.saturated(signals));
  }

  /** Stores what /v1/models says of the instance's models, into the record as it was read (a registration in between wins). */
  private async readModelInfo(s: InstanceState): Promise<void> {
    let served: Record<string, ModelInfo>;
    try {
      served = await readModels(s.url, this.config.PROBE_TIMEOUT_S * 1000, s.api_key);
    } catch (err) {
      this.logger.debug(`cannot read the models of ${s.instance_id}: ${(err as Error).message}`);
      return;
    }
    const info: Record<string, ModelInfo> = Object.create(null);
    for (const m of s.models) if (Object.hasOwn(served, m)) info[m] = served[m];
    const { registered_at: _r, ...record } = recordOf(s);
    await this.store.updateModelInfo(record, info, Date.now());
  }

  /** KV_CACHE_GUARD=1 turns the guard off: a full cache (1.0) is then not saturated either. */
  saturated(signals: EngineSignals): boolean {
    const guard = this.config.KV_CACHE_GUARD;
    return guard < 1 && signals.kv_cache_usage !== null && signals.kv_cache_usage >= guard;
  }
}
