import type { RegistrationResponse } from '@switchyard/contracts';
import type { SimConfig } from './sim-config';
import type { SimServer } from './sim-server';

/** Registers the sim with the control plane and heartbeats its own qps_1m and gpu_util; re-registers on 404. */
export class RegistrationAgent {
  private timer?: NodeJS.Timeout;
  private instanceId?: string;

  constructor(private readonly config: SimConfig, private readonly sim: SimServer, private readonly url: string) {}

  private headers(): Record<string, string> {
    const h: Record<string, string> = { 'content-type': 'application/json' };
    if (this.config.ADMIN_TOKEN) h.authorization = `Bearer ${this.config.ADMIN_TOKEN}`;
    return h;
  }

  async register(): Promise<RegistrationResponse> {
    const body = { instance_id: this.config.INSTANCE_ID, url: this.url, models: [this.config.MODEL], max_inflight: undefined, meta: { sim: true, max_batch: this.config.MAX_BATCH } };
    const res = await fetch(`${this.config.CONTROL_PLANE_URL}/v1/instances`, { method: 'POST', headers: this.headers(), body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`registration failed: ${res.status} ${await res.text()}`);
    const reg = (await res.json()) as RegistrationResponse;
    this.instanceId = reg.instance_id;
    return reg;
  }

  async start(): Promise<void> {
    const reg = await this.register();
    this.timer = setInterval(() => void this.beat(), reg.heartbeat_interval_s * 1000);
    this.timer.unref();
  }

  stop(): void {
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
