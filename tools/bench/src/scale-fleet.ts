/**
 * The scale section's process run: 4 proxy processes in front of N registered instances, all
 * served by one fast upstream process (so the upstream is never the limit), one wrk per proxy.
 * Reports proxy requests/s, p99 and Redis's script time per proxied request (every script the
 * run caused: acquires, releases, lease renewals, reconciles, registry syncs).
 */
import Redis from 'ioredis';
import { freePort } from '@switchyard/testing';
import { registerInRedis, startProxy, startRedis } from './fleet';
import { post, until } from './http-util';
import type { ProcessGroup } from './procs';
import { runWrk } from './wrk';

export interface FleetRunSettings {
  instances: number[];
  proxies: number;
  connectionsPerProxy: number;
  durationS: number;
  warmupS: number;
}

export interface FleetRun {
  instances: number;
  proxies: number;
  rps: number;
  /** The worst proxy's p99. */
  p99Ms: number;
  errors: number;
  scriptUsPerRequest: number;
  /** Script calls per proxied request (2 when every request is one acquire and one release; the timers add a little). */
  scriptsPerRequest: number;
}

const PATH = '/v1/chat/completions';
const BODY = JSON.stringify({ model: 'bench-model', messages: [{ role: 'user', content: 'Say hello.' }] });

export async function runFleet(group: ProcessGroup, settings: FleetRunSettings, log: (m: string) => void): Promise<FleetRun[]> {
  const port = await freePort();
  const upstream = group.node('fast-upstream-scale', 'tools/bench/src/fast-upstream.ts', { PORTS: String(port) });
  await group.waitForPort(upstream, port);
  const runs: FleetRun[] = [];
  for (const n of settings.instances) {
    const redis = await startRedis(group);
    // One fast upstream backs every instance id: the selection among N is what is measured.
    await registerInRedis(
      redis.url,
      Array.from({ length: n }, (_, i) => ({ instance_id: `fleet-${String(i).padStart(4, '0')}`, url: `http://127.0.0.1:${port}`, models: ['bench-model'] })),
    );
    const proxies = [];
    for (let i = 0; i < settings.proxies; i++) proxies.push(await startProxy(group, `scale-proxy-${n}-${i}`, redis.url, 'least_load', { LOG_LEVEL: 'warn' }));
    for (const p of proxies) await until(`${p.url} to route`, async () => (await post(p.url + PATH, BODY)).status === 200);
    await Promise.all(proxies.map((p) => runWrk({ url: p.url + PATH, body: BODY, connections: settings.connectionsPerProxy, durationS: settings.warmupS, dir: group.dir })));
    const admin = new Redis(redis.url);
    await admin.config('RESETSTAT');
    const results = await Promise.all(proxies.map((p) => runWrk({ url: p.url + PATH, body: BODY, connections: settings.connectionsPerProxy, durationS: settings.durationS, dir: group.dir })));
    const stats = await admin.info('commandstats');
    admin.disconnect();
    let usec = 0;
    let calls = 0;
    for (const name of ['evalsha', 'eval']) {
      const m = new RegExp(`cmdstat_${name}:calls=(\\d+),usec=(\\d+)`).exec(stats);
      calls += Number(m?.[1] ?? 0);
      usec += Number(m?.[2] ?? 0);
    }
    const requests = results.reduce((s, r) => s + r.requests, 0);
    const run: FleetRun = {
      instances: n,
      proxies: proxies.length,
      rps: results.reduce((s, r) => s + r.rps, 0),
      p99Ms: Math.max(...results.map((r) => r.p99Ms)),
      errors: results.reduce((s, r) => s + r.errors, 0),
      scriptUsPerRequest: usec / requests,
      scriptsPerRequest: calls / requests,
    };
    log(`scale fleet: ${n} instances, ${run.proxies} proxies: ${Math.round(run.rps)} requests/s, p99 ${run.p99Ms.toFixed(1)} ms, ${run.errors} errors, ${run.scriptUsPerRequest.toFixed(1)} µs Redis scripts/request (${run.scriptsPerRequest.toFixed(2)} scripts/request)`);
    runs.push(run);
    for (const p of proxies) await group.stop(p.proc);
    await redis.stop();
  }
  return runs;
}
