import { Inject, Injectable } from '@nestjs/common';
import type { LoadStore } from '@switchyard/load-store';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { Fleet, readFleet } from '../common/fleet';
import { LOAD_STORE } from '../common/tokens';
import { toDebugStatus } from '../debug/debug-view';

/**
 * The control plane's Prometheus metrics, in a registry of its own (single-process mode
 * runs the proxy's registry in the same process). Fleet gauges are filled at scrape time
 * from one store read shared by every gauge of that scrape; when the read fails they are
 * left empty rather than stale, and switchyard_store_up says why.
 */
@Injectable()
export class ControlPlaneMetrics {
  readonly registry = new Registry();
  readonly storeErrors = new Counter({
    name: 'switchyard_store_errors_total',
    help: 'Failed calls from the control plane to the shared store (scrapes, lease sweeps, debug reads, readiness checks)',
    registers: [this.registry],
    // Waits for this scrape's read, so a failure of that read is already counted in it.
    collect: () => this.fleetForScrape().then(() => undefined),
  });
  readonly leasesReaped = new Counter({ name: 'switchyard_leases_reaped_total', help: 'Expired proxy leases whose contributions were removed', registers: [this.registry] });
  private readonly httpRequestsNow = new Counter({ name: 'switchyard_control_plane_http_requests_total', help: 'HTTP responses of the control plane by route, method and status', labelNames: ['route', 'method', 'status'], registers: [this.registry] });
  /** Deprecated name of the same counts, kept one release. */
  private readonly httpRequestsOld = new Counter({ name: 'switchyard_http_requests_total', help: 'Deprecated: use switchyard_control_plane_http_requests_total (same counts); removed in the next release', labelNames: ['route', 'method', 'status'], registers: [this.registry] });
  /** Counts under both names while the old one lasts. */
  readonly httpRequests = {
    inc: (labels: { route: string; method: string; status: string }) => {
      this.httpRequestsNow.inc(labels);
      this.httpRequestsOld.inc(labels);
    },
  };
  private pending?: Promise<Fleet | null>;

  constructor(@Inject(LOAD_STORE) private readonly store: LoadStore) {
    const registers = [this.registry];
    const fleet = () => this.fleetForScrape();
    // The same counts as GET /debug/status, from the same function.
    const status = async () => {
      const f = await fleet();
      return f ? toDebugStatus(f, f.now) : null;
    };
    new Gauge({
      name: 'switchyard_store_up',
      help: '1 when the last scrape could read the shared store, else 0',
      registers,
      async collect() {
        this.set((await fleet()) ? 1 : 0);
      },
    });
    new Gauge({
      name: 'switchyard_instances',
      help: 'Registered instances by liveness',
      labelNames: ['state'],
      registers,
      async collect() {
        this.reset();
        const st = await status();
        if (!st) return;
        for (const [state, n] of Object.entries(st.instances)) this.set({ state }, n);
      },
    });
    const perInstance = (name: string, help: string, read: (s: Fleet['instances'][number]) => number | null) =>
      new Gauge({
        name,
        help,
        labelNames: ['instance_id'],
        registers,
        async collect() {
          this.reset();
          for (const s of (await fleet())?.instances ?? []) {
            const v = read(s);
            // null is unknown: no sample, never a zero.
            if (v !== null) this.set({ instance_id: s.instance_id }, v);
          }
        },
      });
    perInstance('switchyard_instance_inflight', 'In-flight requests per instance: the sum of every proxy contribution', (s) => s.load.inflight);
    perInstance('switchyard_instance_qps_1m', 'Requests per second over the last minute, as the instance last reported', (s) => s.load.qps_1m);
    perInstance('switchyard_instance_gpu_utilization_ratio', 'GPU utilisation (0..1), as the instance last reported', (s) => (s.load.gpu_util === null ? null : s.load.gpu_util / 100));
    perInstance('switchyard_instance_gpu_util', 'Deprecated: use switchyard_instance_gpu_utilization_ratio (0..1); GPU utilisation in percent; removed in the next release', (s) => s.load.gpu_util);
    perInstance('switchyard_instance_engine_running', 'Requests the engine reports decoding now, from its /metrics', (s) => s.engine.running);
    perInstance('switchyard_instance_engine_waiting', 'Requests queued inside the engine, from its /metrics', (s) => s.engine.waiting);
    perInstance('switchyard_instance_engine_kv_cache_usage_ratio', 'KV-cache usage (0..1) the engine reports on its /metrics', (s) => s.engine.kv_cache_usage);
    perInstance('switchyard_instance_engine_scraped_timestamp_seconds', 'When the engine /metrics were last read successfully (Unix seconds)', (s) => (s.engine.scraped_at === null ? null : s.engine.scraped_at / 1000));
    perInstance('switchyard_instance_engine_scrape_error', '1 when the last /metrics scrape of the instance failed (scrape_error in the debug view), 0 when it worked', (s) => (s.engine.scraped_at === null && s.engine.scrape_error === null ? null : s.engine.scrape_error ? 1 : 0));
    new Gauge({
      name: 'switchyard_proxies',
      help: 'Proxy leases by state (draining counts alive proxies that are draining)',
      labelNames: ['state'],
      registers,
      async collect() {
        this.reset();
        const st = await status();
        if (!st) return;
        for (const [state, n] of Object.entries(st.proxies)) this.set({ state }, n);
      },
    });
    new Gauge({
      name: 'switchyard_queued_requests',
      help: 'Requests waiting in the admission queues of alive proxies',
      registers,
      async collect() {
        const st = await status();
        if (st) this.set(st.queued_total);
        // reset() would leave an unlabelled gauge at 0; unknown must be no sample at all.
        else this.remove();
      },
    });
    new Gauge({
      name: 'switchyard_queued_total',
      help: 'Deprecated: use switchyard_queued_requests (a gauge with a counter suffix); removed in the next release',
      registers,
      async collect() {
        const st = await status();
        if (st) this.set(st.queued_total);
        // reset() would leave an unlabelled gauge at 0; unknown must be no sample at all.
        else this.remove();
      },
    });
    collectDefaultMetrics({ register: this.registry, prefix: 'switchyard_control_plane_' });
  }

  /** Every gauge's collect() of one scrape starts in the same tick, so they share this one read. */
  private fleetForScrape(): Promise<Fleet | null> {
    this.pending ??= readFleet(this.store)
      .catch(() => {
        this.storeErrors.inc();
        return null;
      })
      .finally(() => (this.pending = undefined));
    return this.pending;
  }
}
