/** What a proxy publishes about itself with each lease renewal. */
export interface ProxyInfo {
  proxy_id: string;
  inflight_http: number;
  queued: Record<string, number>;
  draining: boolean;
  degraded: boolean;
}

export interface ProxyState extends ProxyInfo {
  alive: boolean;
  lease_expires_at: number;
  last_seen_at: number;
}

/** A proxy's identity includes its start time, so a restarted proxy never inherits a dead one's counts. */
export function makeProxyId(name: string, startedAt: number = Date.now()): string {
  return `${name}@${startedAt.toString(36)}`;
}
