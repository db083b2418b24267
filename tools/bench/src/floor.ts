import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '@switchyard/testing';
import { registerViaControlPlane, startControlPlane, startProxy, startRedis } from './fleet';
import { post, until } from './http-util';
import { CLOCK_TICKS, Proc, ProcessGroup } from './procs';
import { cpuTicksFromStat } from './stats';
import { runWrk, WrkResult } from './wrk';

/**
 * The proxy against Node's floor: a minimal node http + undici + `stream.pipeline`
 * proxy with no routing (floor-proxy.ts), on the same machine in the same run, so
 * only ratios are reported. Two loads: non-streaming JSON on 32 connections, and
 * LLM-like streams (300 concurrent streams of 100 SSE chunks 20 ms apart).
 */
export interface FloorSettings {
  connections: number;
  streams: number;
  chunks: number;
  chunkMs: number;
  durationS: number;
  warmupS: number;
  /** Rounds of every target in turn; results are summed over rounds, so drift of the shared machine spreads over all targets. */
  rounds: number;
  /** Also run the proxy with WORKERS=2 (node:cluster) on the JSON load. */
  workers: boolean;
}

/**
 * `switchyard-sse-unparsed`: the same proxy and the same bytes, served as
 * application/octet-stream so the proxy does not parse them (SSE parsing off);
 * `switchyard-traced`: a second proxy with OTEL_EXPORTER_OTLP_ENDPOINT set (tracing on).
 */
export type FloorTarget = 'floor' | 'switchyard' | 'switchyard-workers-2' | 'switchyard-sse-unparsed' | 'switchyard-traced';

export interface FloorCell extends WrkResult {
  cpuUsPerReq: number;
  /** CPU µs per SSE chunk passed on (streaming load only). */
  cpuUsPerChunk?: number;
}

export interface FloorResult {
  settings: FloorSettings;
  json: Partial<Record<FloorTarget, FloorCell>>;
  sse: Partial<Record<FloorTarget, FloorCell>>;
}

const PATH = '/v1/chat/completions';
const MESSAGES = [{ role: 'user', content: 'Say hello.' }];
const BODY_JSON = JSON.stringify({ model: 'bench-model', messages: MESSAGES });
const BODY_SSE = JSON.stringify({ model: 'bench-paced', messages: MESSAGES, stream: true });
const BODY_UNPARSED = JSON.stringify({ model: 'bench-paced-raw', messages: MESSAGES, stream: true });

/** The OTLP/HTTP receiver of the traced proxy: reads each export and answers 200, nothing else. */
function otlpSink(): Promise<{ url: string; exports: () => number; close: () => Promise<void> }> {
  let n = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      n += 1;
      res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': '0' }).end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, exports: () => n, close: () => new Promise((r) => server.close(() => r())) }),
    ),
  );
}

/** utime+stime of a process and every descendant still alive (a WORKERS=N proxy is a process group). */
function cpuTicksTree(pid: number): number {
  let ticks = 0;
  const stack = [pid];
  while (stack.length) {
    const p = stack.pop() as number;
    try {
      ticks += cpuTicksFromStat(readFileSync(`/proc/${p}/stat`, 'utf8'));
      for (const t of readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)) stack.push(Number(t));
    } catch {
      // Gone meanwhile.
    }
  }
  return ticks;
}

interface Target {
  name: FloorTarget;
  url: string;
  pid: number;
  /** The request body, when not the load's own. */
  body?: string;
}

function sum(cells: FloorCell[], chunksPerStream?: number): FloorCell {
  const requests = cells.reduce((s, c) => s + c.requests, 0);
  const durationS = cells.reduce((s, c) => s + c.durationS, 0);
  const cpuUs = cells.reduce((s, c) => s + c.cpuUsPerReq * c.requests, 0);
  const mean = (k: 'p50Ms' | 'p90Ms' | 'p99Ms' | 'meanMs') => cells.reduce((s, c) => s + c[k], 0) / cells.length;
  return {
    requests,
    durationS,
    rps: requests / durationS,
    p50Ms: mean('p50Ms'),
    p90Ms: mean('p90Ms'),
    p99Ms: mean('p99Ms'),
    meanMs: mean('meanMs'),
    errors: cells.reduce((s, c) => s + c.errors, 0),
    cpuUsPerReq: cpuUs / Math.max(1, requests),
    ...(chunksPerStream ? { cpuUsPerChunk: cpuUs / Math.max(1, requests * chunksPerStream) } : {}),
  };
}

export async function runFloor(group: ProcessGroup, settings: FloorSettings, log: (m: string) => void): Promise<FloorResult> {
  const [fastPort, pacedPort, rawPort, floorJsonPort, floorSsePort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  const fast = group.node('floor-fast-upstream', 'tools/bench/src/fast-upstream.ts', { PORTS: String(fastPort) });
  const paced = group.node('floor-paced-upstream', 'tools/bench/src/paced-upstream.ts', { PORT: String(pacedPort), CHUNKS: String(settings.chunks), CHUNK_MS: String(settings.chunkMs) });
  const raw = group.node('floor-paced-unlabelled', 'tools/bench/src/paced-upstream.ts', { PORT: String(rawPort), CHUNKS: String(settings.chunks), CHUNK_MS: String(settings.chunkMs), CONTENT_TYPE: 'application/octet-stream' });
  const floorJson = group.node('floor-json', 'tools/bench/src/floor-proxy.ts', { PORT: String(floorJsonPort), UPSTREAM: `http://127.0.0.1:${fastPort}` });
  const floorSse = group.node('floor-sse', 'tools/bench/src/floor-proxy.ts', { PORT: String(floorSsePort), UPSTREAM: `http://127.0.0.1:${pacedPort}` });
  await Promise.all([group.waitForPort(fast, fastPort), group.waitForPort(paced, pacedPort), group.waitForPort(raw, rawPort), group.waitForPort(floorJson, floorJsonPort), group.waitForPort(floorSse, floorSsePort)]);
  const sink = await otlpSink();

  const redis = await startRedis(group);
  const cp = await startControlPlane(group, redis.url, 'floor-control-plane');
  await registerViaControlPlane(cp.url, [
    { instance_id: 'fast-0', url: `http://127.0.0.1:${fastPort}`, models: ['bench-model'] },
    { instance_id: 'paced-0', url: `http://127.0.0.1:${pacedPort}`, models: ['bench-paced'] },
    { instance_id: 'paced-raw-0', url: `http://127.0.0.1:${rawPort}`, models: ['bench-paced-raw'] },
  ]);
  const proxy = await startProxy(group, 'floor-proxy-1', redis.url, 'least_load', { LOG_LEVEL: 'warn' });
  await until('the proxy to route to the fast upstream', async () => (await post(proxy.url + PATH, BODY_JSON)).status === 200);
  // Tracing on: every span exported (a queue large enough that none is dropped), once a second.
  const traced = await startProxy(group, 'floor-proxy-traced', redis.url, 'least_load', { LOG_LEVEL: 'warn', OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_BSP_MAX_QUEUE_SIZE: '65536', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '2048', OTEL_BSP_SCHEDULE_DELAY: '1000' });
  await until('the traced proxy to route', async () => (await post(traced.url + PATH, BODY_JSON)).status === 200);
  await until('the traced proxy to export', async () => sink.exports() > 0);
  const procs: Proc[] = [fast, paced, raw, floorJson, floorSse, cp.proc, proxy.proc, traced.proc];

  const jsonTargets: Target[] = [
    { name: 'floor', url: `http://127.0.0.1:${floorJsonPort}`, pid: floorJson.pid },
    { name: 'switchyard', url: proxy.url, pid: proxy.proc.pid },
    { name: 'switchyard-traced', url: traced.url, pid: traced.proc.pid },
  ];
  if (settings.workers) {
    const multi = await startProxy(group, 'floor-proxy-2w', redis.url, 'least_load', { LOG_LEVEL: 'warn', WORKERS: '2' });
    await until('the 2-worker proxy to route', async () => (await post(multi.url + PATH, BODY_JSON)).status === 200);
    procs.push(multi.proc);
    jsonTargets.push({ name: 'switchyard-workers-2', url: multi.url, pid: multi.proc.pid });
  }
  const sseTargets: Target[] = [
    { name: 'floor', url: `http://127.0.0.1:${floorSsePort}`, pid: floorSse.pid },
    { name: 'switchyard', url: proxy.url, pid: proxy.proc.pid },
    { name: 'switchyard-sse-unparsed', url: proxy.url, pid: proxy.proc.pid, body: BODY_UNPARSED },
    { name: 'switchyard-traced', url: traced.url, pid: traced.proc.pid },
  ];

  const measure = async (t: Target, body: string, connections: number, durationS: number): Promise<FloorCell> => {
    const before = cpuTicksTree(t.pid);
    const r = await runWrk({ url: t.url + PATH, body, connections, durationS, dir: group.dir });
    return { ...r, cpuUsPerReq: (((cpuTicksTree(t.pid) - before) / CLOCK_TICKS) * 1e6) / Math.max(1, r.requests) };
  };
  for (const t of jsonTargets) {
    log(`floor warm-up ${t.name}`);
    await measure(t, BODY_JSON, settings.connections, settings.warmupS);
  }
  const json = new Map<FloorTarget, FloorCell[]>();
  const sse = new Map<FloorTarget, FloorCell[]>();
  const streamS = (settings.chunks * settings.chunkMs) / 1000;
  for (let round = 0; round < settings.rounds; round++) {
    // Every other round in reverse order (A B, B A), so a trend in the machine's load favours no target.
    const order = <T>(list: T[]) => (round % 2 ? [...list].reverse() : list);
    for (const t of order(jsonTargets)) {
      const c = await measure(t, BODY_JSON, settings.connections, settings.durationS);
      json.set(t.name, [...(json.get(t.name) ?? []), c]);
      log(`floor json ${t.name.padEnd(20)} ${c.rps.toFixed(0).padStart(6)} req/s  cpu ${c.cpuUsPerReq.toFixed(0)} µs/req  errors ${c.errors}`);
    }
    for (const t of order(sseTargets)) {
      // Long enough for several generations of streams.
      const c = await measure(t, t.body ?? BODY_SSE, settings.streams, Math.max(settings.durationS, 3 * streamS));
      sse.set(t.name, [...(sse.get(t.name) ?? []), c]);
      log(`floor sse  ${t.name.padEnd(20)} ${c.rps.toFixed(0).padStart(6)} streams/s  cpu ${((c.cpuUsPerReq / (settings.chunks + 1)) as number).toFixed(1)} µs/chunk  errors ${c.errors}`);
    }
  }
  await Promise.all(procs.map((p) => group.stop(p)));
  await redis.stop();
  await sink.close();
  const out = (m: Map<FloorTarget, FloorCell[]>, chunks?: number) => Object.fromEntries([...m].map(([k, cells]) => [k, sum(cells, chunks)]));
  // Each stream carries its chunks plus the closing `data: [DONE]`.
  return { settings, json: out(json), sse: out(sse, settings.chunks + 1) };
}

export interface FloorTargetCheck {
  name: string;
  goal: string;
  measured: string;
  /** null: a figure shown, not a target. */
  met: boolean | null;
}

export function floorTargets(r: FloorResult): FloorTargetCheck[] {
  const out: FloorTargetCheck[] = [];
  const { floor: fj, switchyard: sj } = r.json;
  const { floor: fs, switchyard: ss } = r.sse;
  if (fj && sj) {
    const rps = sj.rps / fj.rps;
    out.push({ name: 'proxy req/s vs floor', goal: '≥ 0.85× (JSON, 32 connections)', measured: `${sj.rps.toFixed(0)} vs ${fj.rps.toFixed(0)} req/s (${rps.toFixed(2)}×)`, met: rps >= 0.85 });
    const cpu = sj.cpuUsPerReq / fj.cpuUsPerReq;
    out.push({ name: 'proxy CPU per request vs floor', goal: '≤ 1.3× (JSON, 32 connections)', measured: `${sj.cpuUsPerReq.toFixed(0)} vs ${fj.cpuUsPerReq.toFixed(0)} µs (${cpu.toFixed(2)}×)`, met: cpu <= 1.3 });
  }
  if (fs && ss && fs.cpuUsPerChunk && ss.cpuUsPerChunk) {
    const cpu = ss.cpuUsPerChunk / fs.cpuUsPerChunk;
    out.push({ name: 'proxy CPU per SSE chunk vs floor', goal: `≤ 1.1× (${r.settings.streams} streams × ${r.settings.chunks} chunks, ${r.settings.chunkMs} ms apart)`, measured: `${ss.cpuUsPerChunk.toFixed(1)} vs ${fs.cpuUsPerChunk.toFixed(1)} µs (${cpu.toFixed(2)}×)`, met: cpu <= 1.1 });
  }
  const unparsed = r.sse['switchyard-sse-unparsed'];
  if (ss?.cpuUsPerChunk && unparsed?.cpuUsPerChunk) {
    const cpu = ss.cpuUsPerChunk / unparsed.cpuUsPerChunk;
    out.push({ name: 'SSE parsing on vs off (per chunk)', goal: '≤ 1.1× (same proxy, same bytes unlabelled as SSE)', measured: `${ss.cpuUsPerChunk.toFixed(1)} vs ${unparsed.cpuUsPerChunk.toFixed(1)} µs (${cpu.toFixed(2)}×)`, met: cpu <= 1.1 });
  }
  const tj = r.json['switchyard-traced'];
  if (tj && sj) out.push({ name: 'tracing on vs off (per request)', goal: 'CPU µs/request (JSON, 32 connections), shown', measured: `${tj.cpuUsPerReq.toFixed(0)} vs ${sj.cpuUsPerReq.toFixed(0)} µs (${(tj.cpuUsPerReq / sj.cpuUsPerReq).toFixed(2)}×)`, met: null });
  const ts = r.sse['switchyard-traced'];
  if (ts?.cpuUsPerChunk && ss?.cpuUsPerChunk) out.push({ name: 'tracing on vs off (per SSE chunk)', goal: 'CPU µs/chunk, shown', measured: `${ts.cpuUsPerChunk.toFixed(1)} vs ${ss.cpuUsPerChunk.toFixed(1)} µs (${(ts.cpuUsPerChunk / ss.cpuUsPerChunk).toFixed(2)}×)`, met: null });
  const w2 = r.json['switchyard-workers-2'];
  if (w2 && sj) out.push({ name: 'WORKERS=2 vs WORKERS=1', goal: 'req/s (JSON, 32 connections), shown', measured: `${w2.rps.toFixed(0)} vs ${sj.rps.toFixed(0)} req/s (${(w2.rps / sj.rps).toFixed(2)}×)`, met: null });
  return out;
}

const LABEL: Record<FloorTarget, string> = {
  floor: 'floor (node http + undici + pipeline)',
  switchyard: 'Switchyard proxy, WORKERS=1',
  'switchyard-workers-2': 'Switchyard proxy, WORKERS=2',
  'switchyard-sse-unparsed': 'Switchyard proxy, SSE parsing off (same bytes, not labelled SSE)',
  'switchyard-traced': 'Switchyard proxy, tracing on (OTLP/HTTP to a local sink)',
};
export const FLOOR_START = '<!-- floor:start -->';
export const FLOOR_END = '<!-- floor:end -->';

/** The floor section of docs/benchmarks.md, between markers so `--only floor` can replace it alone. */
export function floorMarkdown(r: FloorResult, header: string): string {
  const s = r.settings;
  const rows = (cells: FloorResult['json'], sse: boolean) =>
    (Object.keys(cells) as FloorTarget[])
      .map((k) => {
        const c = cells[k] as FloorCell;
        const base = cells.floor as FloorCell;
        const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
        return sse
          ? `| ${LABEL[k]} | ${c.rps.toFixed(1)} | ${c.p50Ms.toFixed(0)} | ${c.cpuUsPerChunk?.toFixed(1)} (${ratio(c.cpuUsPerChunk ?? 0, base.cpuUsPerChunk ?? 1)}) | ${c.errors} |`
          : `| ${LABEL[k]} | ${c.rps.toFixed(0)} (${ratio(c.rps, base.rps)}) | ${c.p50Ms.toFixed(3)} | ${c.p99Ms.toFixed(3)} | ${c.cpuUsPerReq.toFixed(0)} (${ratio(c.cpuUsPerReq, base.cpuUsPerReq)}) | ${c.errors} |`;
      })
      .join('\n');
  const checks = floorTargets(r)
    .map((t) => `| ${t.name} | ${t.goal} | ${t.measured} | ${t.met === null ? '—' : t.met ? 'yes' : '**no**'} |`)
    .join('\n');
  return `${FLOOR_START}
## 3. The proxy against Node's floor

${header} The floor is \`tools/bench/src/floor-proxy.ts\`: node \`http\` in, one undici \`Agent\` out, \`stream.pipeline\` back, no routing, no counts, no metrics, no logs; it is used only here, for comparison. Both serve the same upstreams on the same machine in the same run: a fast JSON upstream (\`fast-upstream.ts\`) and an LLM-like one (\`paced-upstream.ts\`: ${s.chunks} SSE chunks ${s.chunkMs} ms apart per stream). Load: \`wrk\`, one thread; ${s.rounds} round(s) of every target in turn, ${s.durationS} s per JSON cell; figures are summed over rounds. CPU is utime+stime of the serving process (and its workers) from \`/proc\`, per request or per SSE chunk; Redis is a process of its own and is not counted. Where the time goes: [docs/proxy-profile.md](proxy-profile.md). Observability rows: *SSE parsing off* is the same proxy serving the same bytes from an upstream that labels them \`application/octet-stream\`, so the proxy passes them without the SSE tap (TTFT, inter-token latency, usage); the goal compares parsing on against it. *Tracing on* is a second proxy with \`OTEL_EXPORTER_OTLP_ENDPOINT\` set, exporting every span (OTLP/HTTP protobuf, batched each second) to a sink in the benchmark process that answers 200; tracing off is the plain Switchyard row, where the SDK is not loaded at all.

| target | goal | measured | met |
|---|---|---|---|
${checks}

### Non-streaming chat completion, ${s.connections} connections

| target | req/s (vs floor) | p50 ms | p99 ms | CPU µs/request (vs floor) | errors |
|---|---:|---:|---:|---:|---:|
${rows(r.json, false)}

### ${s.streams} concurrent streams, ${s.chunks} SSE chunks ${s.chunkMs} ms apart

| target | streams/s | p50 stream ms | CPU µs/chunk (vs floor) | errors |
|---|---:|---:|---:|---:|
${rows(r.sse, true)}
${FLOOR_END}`;
}

/** Puts the floor section into an existing benchmarks file, replacing an earlier one. */
export function spliceFloorSection(existing: string, section: string): string {
  const a = existing.indexOf(FLOOR_START);
  const b = existing.indexOf(FLOOR_END);
  if (a >= 0 && b > a) return existing.slice(0, a) + section + existing.slice(b + FLOOR_END.length);
  return `${existing.trimEnd()}\n\n${section}\n`;
}
