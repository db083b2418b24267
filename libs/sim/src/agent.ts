import { setTimeout as sleep } from 'node:timers/promises';
import type { RegistrationResponse } from '@switchyard/contracts';
import type { SimConfig } from './sim-config';
import type { SimServer } from './sim-server';

/** A refusal that waiting will not fix (bad token, rejected body): the sim stops instead of retrying. */
export class RegistrationRefused extends Error {}

const FIRST_RETRY_S = 0.25;

/**
 * Registers the sim with the control plane, retrying with backoff while the control plane is not up
 * yet, and heartbeats its own qps_1m and gpu_util (re-registering on 404). With SIM_HEARTBEAT=false
 * it only registers, as a real engine registered by hand: the control plane's probes keep it alive.
 */
export class RegistrationAgent {
  private timer?: NodeJS.Timeout;
  private instanceId?: string;
  private readonly stopped = new AbortController();

  constructor(
    private readonly config: SimConfig,
    private readonly sim: SimServer,
    private readonly url: string,
    private readonly log: (line: string) => void = console.log,
  ) {}

  private headers(): Record<string, string> {
    const h: Record<string, string> = { 'content-type': 'application/json' };
    if (this.config.ADMIN_TOKEN) h.authorization = `Bearer ${this.config.ADMIN_TOKEN}`;
    return h;
  }

  async register(): Promise<RegistrationResponse> {
    const body = {
      instance_id: this.config.INSTANCE_ID,
      url: this.url,
      models: [this.config.MODEL],
      meta: { sim: true, max_batch: this.config.MAX_BATCH, heartbeat: this.config.SIM_HEARTBEAT },
    };
    const res = await fetch(`${this.config.CONTROL_PLANE_URL}/v1/instances`, { method: 'POST', headers: this.headers(), body: JSON.stringify(body) });
    if (!res.ok) {
      const detail = `registration failed: ${res.status} ${(await res.text()).slice(0, 300)}`;
      throw res.status >= 500 || res.status === 429 || res.status === 404 ? new Error(detail) : new RegistrationRefused(detail);
    }
    const reg = (await res.json()) as RegistrationResponse;
    this.instanceId = reg.instance_id;
    return reg;
  }

  /** Registers, waiting out an unreachable or failing control plane; a refusal (401, 400, 422) is thrown. */
  private async registerWithBackoff(): Promise<RegistrationResponse> {
    for (let delayS = FIRST_RETRY_S; ; delayS = Math.min(delayS * 2, this.config.REGISTER_RETRY_MAX_S)) {
      try {
        return await this.register();
      } catch (err) {
        if (err instanceof RegistrationRefused) throw err;
        const reason = (err as Error & { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
        this.log(`control plane at ${this.config.CONTROL_PLANE_URL} not reachable (${reason}); retrying registration in ${delayS}s`);
        await sleep(delayS * 1000, undefined, { signal: this.stopped.signal });
      }
    }
  }

  async start(): Promise<void> {
    const reg = await this.registerWithBackoff();
    this.log(`registered as ${reg.instance_id}${this.config.SIM_HEARTBEAT ? ` (heartbeat every ${reg.heartbeat_interval_s}s)` : ' (no heartbeats: kept alive by probes)'}`);
    if (!this.config.SIM_HEARTBEAT) return;
    this.timer = setInterval(() => void this.beat(), reg.heartbeat_interval_s * 1000);
    this.timer.unref();
  }

  stop(): void {
    this.stopped.abort();
    clearInterval(this.timer);
  }

  private async beat(): Promise<void> {
    const { qps_1m, gpu_util } = this.sim.stats();
    try {
      const res = await fetch(`${this.config.CONTROL_PLANE_URL}/v1/instances/${encodeURIComponent(this.instanceId ?? '')}/heartbeat`, {
        method: 'POST',
        headers: this.headers(),
        body: JSON.stringify({ qps_1m, gpu_util }),
      });
      if (res.status === 404) await this.register();
    } catch {
      // The control plane is away; the next beat tries again.
    }
  }
}
