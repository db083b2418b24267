import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '@switchyard/testing';
import { registerViaControlPlane, startControlPlane, startProxy, startRedis } from './fleet';
import { getJson, post, until } from './http-util';
import { Peer, startHaproxy, startNginx } from './peers';
import { CLOCK_TICKS, Proc, ProcessGroup, which } from './procs';
import { cpuTicksFromStat, rssKiBFromStatus } from './stats';
import { runWrk, WrkResult } from './wrk';

export type TargetName = 'direct' | 'switchyard' | 'switchyard-log' | 'nginx' | 'haproxy';

export interface OverheadSettings {
  connections: number;
  durationS: number;
  warmupS: number;
  idleStreams: number;
  /** Targets whose memory with idle streams is measured. */
  rssTargets: TargetName[];
  /** Also measure a second proxy with the default LOG_LEVEL=info (one JSON log line per request, to a file). */
  withRequestLog: boolean;
}

export interface ScenarioResult extends WrkResult {
  /** CPU time of the serving process per request (µs); for direct, the upstream's own. */
  cpuUsPerReq: number;
}

export interface TargetResult {
  target: TargetName;
  skipped?: string;
  json?: ScenarioResult;
  jsonC1?: ScenarioResult;
  sse?: ScenarioResult;
  rss?: { baselineKiB: number; withStreamsKiB: number; streams: number; upstreamClosedMs?: number };
}

export interface OverheadResult {
  settings: OverheadSettings;
  targets: TargetResult[];
}

const MESSAGES = [{ role: 'user', content: 'Say hello.' }];
const BODY_JSON = JSON.stringify({ model: 'bench-model', messages: MESSAGES });
const BODY_SSE = JSON.stringify({ model: 'bench-model', messages: MESSAGES, stream: true });
const BODY_HOLD = JSON.stringify({ model: 'bench-model', messages: MESSAGES, stream: true, hold: true });
const PATH = '/v1/chat/completions';
/** The proxy's upstream pool keeps at most 1024 connections per instance, so idle streams go to 8 instances (ports) of the one upstream. */
const HOLD_PORTS = 8;

const cpuTicks = (pid: number) => cpuTicksFromStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
const rssKiB = (pid: number) => rssKiBFromStatus(readFileSync(`/proc/${pid}/status`, 'utf8'));

interface Target {
  name: TargetName;
  url: string;
  pid: () => number;
}

export async function runOverhead(group: ProcessGroup, settings: OverheadSettings, log: (m: string) => void): Promise<OverheadResult> {
  const ports = await Promise.all(Array.from({ length: HOLD_PORTS }, () => freePort()));
  const upstream = group.node('fast-upstream', 'tools/bench/src/fast-upstream.ts', { PORTS: ports.join(',') });
  await group.waitForPort(upstream, ports[0]);
  const upstreamUrl = (i: number) => `http://127.0.0.1:${ports[i]}`;

  const redis = await startRedis(group);
  const cp = await startControlPlane(group, redis.url);
  await registerViaControlPlane(cp.url, [{ instance_id: 'fast-0', url: upstreamUrl(0), models: ['bench-model'] }]);
  // The peers run without access logs; the proxy's per-request log line is measured separately.
  const proxy = await startProxy(group, 'proxy-overhead', redis.url, 'least_load', { LOG_LEVEL: 'warn' });
  await until('the proxy to route to the fast upstream', async () => (await post(proxy.url + PATH, BODY_JSON)).status === 200);

  const targets: Target[] = [
    { name: 'direct', url: upstreamUrl(0), pid: () => upstream.pid },
    { name: 'switchyard', url: proxy.url, pid: () => proxy.proc.pid },
  ];
  const results: TargetResult[] = [{ target: 'direct' }, { target: 'switchyard' }];
  const extraProxies: Proc[] = [];
  if (settings.withRequestLog) {
    const logged = await startProxy(group, 'proxy-overhead-log', redis.url, 'least_load', { LOG_LEVEL: 'info' });
    extraProxies.push(logged.proc);
    targets.push({ name: 'switchyard-log', url: logged.url, pid: () => logged.proc.pid });
    results.push({ target: 'switchyard-log' });
  }
  const peers: Peer[] = [];
  for (const name of ['nginx', 'haproxy'] as const) {
    if (!which(name)) {
      log(`SKIP ${name}: not installed (apt-get install -y ${name})`);
      results.push({ target: name, skipped: `${name} not installed` });
      continue;
    }
    const peer = await (name === 'nginx' ? startNginx : startHaproxy)(group, await freePort(), [ports[0]]);
    peers.push(peer);
    targets.push({ name, url: `http://127.0.0.1:${peer.port}`, pid: () => peer.workerPid() });
    results.push({ target: name });
  }
  const resultOf = (name: TargetName) => results.find((r) => r.target === name) as TargetResult;

  for (const t of targets) {
    log(`warm-up ${t.name}`);
    await runWrk({ url: t.url + PATH, body: BODY_JSON, connections: settings.connections, durationS: settings.warmupS, dir: group.dir });
  }
  // Scenario by scenario, every target in turn, so slow drift of the shared machine spreads over all of them.
  const scenarios = [
    { key: 'json', body: BODY_JSON, connections: settings.connections },
    { key: 'jsonC1', body: BODY_JSON, connections: 1 },
    { key: 'sse', body: BODY_SSE, connections: settings.connections },
  ] as const;
  for (const s of scenarios) {
    for (const t of targets) {
      const pid = t.pid();
      const before = cpuTicks(pid);
      const r = await runWrk({ url: t.url + PATH, body: s.body, connections: s.connections, durationS: settings.durationS, dir: group.dir });
      const cpuUsPerReq = (((cpuTicks(pid) - before) / CLOCK_TICKS) * 1e6) / Math.max(1, r.requests);
      resultOf(t.name)[s.key] = { ...r, cpuUsPerReq };
      log(`${s.key.padEnd(6)} ${t.name.padEnd(14)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50Ms.toFixed(3)} ms  p99 ${r.p99Ms.toFixed(3)} ms  cpu ${cpuUsPerReq.toFixed(0)} µs/req  errors ${r.errors}`);
    }
  }

  // Idle streams: every target in front of the same 8 upstream ports. The harness holds one socket per stream.
  const fdLimit = Number(spawnSync('/bin/sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).stdout.trim());
  if (settings.idleStreams > 0 && Number.isFinite(fdLimit) && fdLimit < settings.idleStreams + 1000) {
    log(`SKIP idle streams: this process may open ${fdLimit} files, ${settings.idleStreams + 1000} are needed (run \`ulimit -n 65535\` in the shell first)`);
  } else if (settings.idleStreams > 0) {
    await registerViaControlPlane(
      cp.url,
      ports.slice(1).map((_, i) => ({ instance_id: `fast-${i + 1}`, url: upstreamUrl(i + 1), models: ['bench-model'] })),
    );
    for (const peer of peers) await group.stop(peer.proc);
    for (const name of settings.rssTargets) {
      let url: string;
      let pid: number;
      let stop: (() => Promise<void>) | undefined;
      if (name === 'switchyard') {
        url = proxy.url;
        pid = proxy.proc.pid;
      } else if (name === 'nginx' || name === 'haproxy') {
        if (!which(name)) continue;
        const peer = await (name === 'nginx' ? startNginx : startHaproxy)(group, await freePort(), ports);
        url = `http://127.0.0.1:${peer.port}`;
        pid = peer.workerPid();
        stop = () => group.stop(peer.proc);
      } else continue;
      resultOf(name).rss = await holdStreams(url + PATH, pid, upstreamUrl(0), settings.idleStreams, log, name, stop);
    }
  }
  // The balance section needs the CPUs: nothing of this section stays running.
  await Promise.all([upstream, proxy.proc, cp.proc, ...extraProxies].map((p) => group.stop(p)));
  await redis.stop();
  return { settings, targets: results };
}

/** Opens `n` SSE streams that the upstream keeps open and idle, reads the serving process's RSS, then closes them all. */
async function holdStreams(
  url: string,
  pid: number,
  upstreamStats: string,
  n: number,
  log: (m: string) => void,
  name: string,
  /** A peer is stopped once its clients left (HAProxy keeps an idle server stream open after its client is gone); the proxy must close them itself. */
  stopPeer?: () => Promise<void>,
): Promise<TargetResult['rss']> {
  const baselineKiB = rssKiB(pid);
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const open: http.ClientRequest[] = [];
  let result: TargetResult['rss'];
  const openOne = () =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(BODY_HOLD) } }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`idle stream answered ${res.statusCode}`));
        res.once('data', () => resolve());
        res.on('error', () => undefined);
      });
      req.on('error', (err) => reject(err));
      req.setTimeout(30_000, () => req.destroy(new Error('idle stream open timed out')));
      req.end(BODY_HOLD);
      open.push(req);
    });
  try {
    const wave = 250;
    for (let i = 0; i < n; i += wave) await Promise.all(Array.from({ length: Math.min(wave, n - i) }, openOne));
    await until(`${n} idle streams at the upstream`, async () => (await getJson<{ held: number }>(`${upstreamStats}/stats`)).held >= n, 30_000);
    await sleep(1000);
    const withStreamsKiB = rssKiB(pid);
    log(`idle   ${name.padEnd(14)} RSS ${(baselineKiB / 1024).toFixed(1)} MiB idle, ${(withStreamsKiB / 1024).toFixed(1)} MiB with ${n} open SSE streams`);
    result = { baselineKiB, withStreamsKiB, streams: n };
  } finally {
    for (const req of open) req.destroy();
    agent.destroy();
    const closing = performance.now();
    await stopPeer?.();
    await until('idle streams to close at the upstream', async () => (await getJson<{ held: number }>(`${upstreamStats}/stats`)).held === 0, 30_000).then(
      () => {
        if (!stopPeer && result) result.upstreamClosedMs = performance.now() - closing;
      },
      (err) => log(`warning: ${(err as Error).message}`),
    );
  }
  return result;
}
