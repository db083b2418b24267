import { STRATEGIES, StrategyKey, type BalanceResult } from './balance';
import type { OverheadResult, ScenarioResult, TargetName, TargetResult } from './overhead';

export interface MachineFacts {
  date: string;
  command: string;
  mode: 'quick' | 'full';
  commit: string;
  nproc: number;
  cpuModel: string;
  memGiB: number;
  node: string;
  os: string;
  loadAvgAtStart: string;
  tools: Record<string, string>;
  elapsedS: number;
}

export interface Targets {
  name: string;
  goal: string;
  measured: string;
  met: boolean | null;
}

const f = (v: number | undefined, digits = 2) => (v === undefined || !Number.isFinite(v) ? 'n/a' : v.toFixed(digits));
const int = (v: number | undefined) => (v === undefined || !Number.isFinite(v) ? 'n/a' : Math.round(v).toLocaleString('en-US'));
/** v as a multiple of ref, when both are positive (an added latency within noise of zero has no meaningful ratio). */
const ratio = (v: number | undefined, ref: number | undefined) => (v === undefined || ref === undefined || !(ref > 0) || !(v > 0) ? '' : ` (${(v / ref).toFixed(2)}×)`);

const LABEL: Record<TargetName, string> = {
  direct: 'direct (no proxy)',
  switchyard: 'Switchyard proxy',
  'switchyard-log': 'Switchyard proxy, LOG_LEVEL=info',
  nginx: 'nginx `least_conn`',
  haproxy: 'HAProxy `leastconn`',
};

type ScenarioKey = 'json' | 'jsonC1' | 'sse';

function scenarioTable(o: OverheadResult, key: ScenarioKey): string {
  const get = (t: TargetName) => o.targets.find((x) => x.target === t)?.[key];
  const direct = get('direct');
  const nginx = get('nginx');
  const added = (r: ScenarioResult | undefined, pick: (x: ScenarioResult) => number) => (r && direct ? pick(r) - pick(direct) : undefined);
  const nginxAdded50 = added(nginx, (x) => x.p50Ms);
  const nginxAdded99 = added(nginx, (x) => x.p99Ms);
  const rows = o.targets.map((t: TargetResult) => {
    const r = t[key];
    if (t.skipped || !r) return `| ${LABEL[t.target]} | skipped: ${t.skipped ?? 'not measured'} | | | | | | |`;
    const a50 = added(r, (x) => x.p50Ms);
    const a99 = added(r, (x) => x.p99Ms);
    const isDirect = t.target === 'direct';
    return `| ${LABEL[t.target]} | ${int(r.rps)}${ratio(r.rps, nginx?.rps)} | ${f(r.p50Ms, 3)}${ratio(r.p50Ms, nginx?.p50Ms)} | ${f(r.p99Ms, 3)}${ratio(r.p99Ms, nginx?.p99Ms)} | ${isDirect ? '—' : f(a50, 3) + ratio(a50, nginxAdded50)} | ${isDirect ? '—' : f(a99, 3) + ratio(a99, nginxAdded99)} | ${f(r.cpuUsPerReq, 0)}${ratio(r.cpuUsPerReq, nginx?.cpuUsPerReq)} | ${r.errors} |`;
  });
  return [
    '| target | req/s | p50 ms | p99 ms | added p50 ms vs direct | added p99 ms vs direct | CPU µs/request | errors |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
  ].join('\n');
}

function rssTable(o: OverheadResult): string {
  const rows = o.targets
    .filter((t) => t.rss)
    .map((t) => {
      const r = t.rss as NonNullable<TargetResult['rss']>;
      const per = (r.withStreamsKiB - r.baselineKiB) / r.streams;
      return `| ${LABEL[t.target]} | ${f(r.baselineKiB / 1024, 1)} | ${f(r.withStreamsKiB / 1024, 1)} | ${f(per, 1)} | ${r.upstreamClosedMs === undefined ? '—' : int(r.upstreamClosedMs)} |`;
    });
  return [
    `| target | RSS before, MiB | RSS with ${int(o.settings.idleStreams)} idle SSE streams, MiB | KiB per stream | all upstream streams closed after the clients left, ms |`,
    '|---|---:|---:|---:|---:|',
    ...rows,
  ].join('\n');
}

function balanceTable(b: BalanceResult, loadIndex: number): string {
  const rows = b.runs.map(({ strategy, loads }) => {
    const r = loads[loadIndex];
    const byRound = r.ttftP99ByRound.length > 1 ? ` | ${r.ttftP99ByRound.map((v) => f(v, 0)).join(' / ')}` : '';
    return `| ${STRATEGIES[strategy]} | ${r.measured} | ${f(r.ttftP50Ms, 0)} | **${f(r.ttftP99Ms, 0)}**${byRound} | ${f(r.e2eP50Ms, 0)} | ${f(r.e2eP99Ms, 0)} | ${f(r.spread.mean, 2)} | ${f(r.spread.p99, 0)} | ${f(r.spread.max, 0)} | ${f(r.meanInflight, 1)} | ${int(r.proxyCpuUsPerReq)} | ${f(r.machineBusy * 100, 0)}% | ${r.errors} |`;
  });
  const rounds = b.settings.rounds > 1;
  return [
    `| strategy | requests measured | TTFT p50 ms | TTFT p99 ms |${rounds ? ' p99 by round |' : ''} end-to-end p50 ms | end-to-end p99 ms | in-flight spread mean | spread p99 | spread max | mean fleet in-flight | proxy CPU µs/request | machine CPU busy | errors |`,
    `|---|---:|---:|---:|${rounds ? '---:|' : ''}---:|---:|---:|---:|---:|---:|---:|---:|---:|`,
    ...rows,
  ].join('\n');
}

export function evaluateTargets(o: OverheadResult | undefined, b: BalanceResult | undefined): Targets[] {
  const out: Targets[] = [];
  const load90 = b ? b.settings.loads.findIndex((l) => Math.abs(l - 0.9) < 1e-9) : -1;
  const p99At = (k: StrategyKey) => b?.runs.find((r) => r.strategy === k)?.loads[load90]?.ttftP99Ms;
  if (b && load90 >= 0) {
    const shared = p99At('shared_least_load');
    const global = p99At('global_least_load');
    const rr = p99At('round_robin');
    const signed = (x: number) => `${x >= 0 ? '+' : ''}${f(x * 100, 1)}%`;
    if (shared !== undefined && global !== undefined) {
      const over = shared / global - 1;
      const byRound = (k: StrategyKey) => b?.runs.find((r) => r.strategy === k)?.loads[load90]?.ttftP99ByRound ?? [];
      const sr = byRound('shared_least_load');
      const gr = byRound('global_least_load');
      const rounds = sr.length > 1 && sr.length === gr.length ? `; round by round ${sr.map((v, i) => signed(v / gr[i] - 1)).join(', ')}` : '';
      out.push({ name: 'shared least_load vs one global scheduler', goal: 'p99 TTFT at 90% load within 10% of the global scheduler', measured: `${f(shared, 0)} ms vs ${f(global, 0)} ms (${signed(over)}${rounds})`, met: shared <= global * 1.1 });
    }
    if (shared !== undefined && rr !== undefined) {
      const below = 1 - shared / rr;
      out.push({ name: 'shared least_load vs round_robin', goal: 'p99 TTFT at 90% load ≥30% below round_robin', measured: `${f(shared, 0)} ms vs ${f(rr, 0)} ms (${f(below * 100, 1)}% below)`, met: shared <= rr * 0.7 });
    }
  }
  if (o) {
    const get = (t: TargetName) => o.targets.find((x) => x.target === t);
    const c1 = get('switchyard')?.jsonC1;
    const d1 = get('direct')?.jsonC1;
    if (c1 && d1) {
      const added = c1.p50Ms - d1.p50Ms;
      out.push({ name: 'proxy added latency', goal: 'added p50 < 1 ms (one connection, JSON)', measured: `${f(added, 3)} ms (${f(c1.p50Ms, 3)} vs ${f(d1.p50Ms, 3)} ms direct)`, met: added < 1 });
    }
    const sy = get('switchyard')?.json;
    const ng = get('nginx')?.json;
    if (sy && ng) {
      out.push({ name: 'proxy throughput', goal: '≥ half of nginx (JSON, 32 connections)', measured: `${int(sy.rps)} vs ${int(ng.rps)} req/s (${f(sy.rps / ng.rps, 2)}×)`, met: sy.rps >= ng.rps / 2 });
    }
    const sse = get('switchyard')?.sse;
    const ngSse = get('nginx')?.sse;
    if (sse && ngSse) {
      out.push({ name: 'proxy throughput, streaming', goal: '≥ half of nginx (64-chunk SSE, 32 connections)', measured: `${int(sse.rps)} vs ${int(ngSse.rps)} req/s (${f(sse.rps / ngSse.rps, 2)}×)`, met: sse.rps >= ngSse.rps / 2 });
    }
  }
  return out;
}

/** p99 TTFT by strategy and load, as a grouped bar chart; drawn from the numbers, nothing by hand. */
export function ttftSvg(b: BalanceResult, title: string): string {
  const W = 760;
  const H = 400;
  const m = { top: 48, right: 20, bottom: 92, left: 64 };
  const colors: Record<StrategyKey, string> = { round_robin: '#d62728', local_least_load: '#ff7f0e', shared_least_load: '#1f77b4', global_least_load: '#2ca02c' };
  const values = b.runs.flatMap((r) => r.loads.map((l) => l.ttftP99Ms)).filter(Number.isFinite);
  const top = niceCeil(Math.max(1, ...values));
  const plotW = W - m.left - m.right;
  const plotH = H - m.top - m.bottom;
  const y = (v: number) => m.top + plotH - (v / top) * plotH;
  const groups = b.settings.loads.length;
  const groupW = plotW / groups;
  const barW = (groupW * 0.7) / b.runs.length;
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    `<text x="${W / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`,
  ];
  for (let i = 0; i <= 5; i++) {
    const v = (top / 5) * i;
    parts.push(`<line x1="${m.left}" x2="${W - m.right}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`);
    parts.push(`<text x="${m.left - 6}" y="${y(v) + 4}" text-anchor="end">${Math.round(v)}</text>`);
  }
  parts.push(`<text transform="translate(16 ${m.top + plotH / 2}) rotate(-90)" text-anchor="middle">p99 time to first token, ms</text>`);
  b.settings.loads.forEach((load, g) => {
    const gx = m.left + g * groupW + groupW * 0.15;
    b.runs.forEach((run, k) => {
      const v = run.loads[g]?.ttftP99Ms;
      if (!Number.isFinite(v)) return;
      const x = gx + k * barW;
      parts.push(`<rect class="bar" x="${x.toFixed(1)}" y="${y(v).toFixed(1)}" width="${(barW - 4).toFixed(1)}" height="${(m.top + plotH - y(v)).toFixed(1)}" fill="${colors[run.strategy]}"/>`);
      parts.push(`<text x="${(x + (barW - 4) / 2).toFixed(1)}" y="${(y(v) - 4).toFixed(1)}" text-anchor="middle" font-size="11">${Math.round(v)}</text>`);
    });
    parts.push(`<text x="${m.left + g * groupW + groupW / 2}" y="${m.top + plotH + 18}" text-anchor="middle" font-weight="bold">${Math.round(load * 100)}% of fleet capacity</text>`);
  });
  parts.push(`<line x1="${m.left}" x2="${W - m.right}" y1="${m.top + plotH}" y2="${m.top + plotH}" stroke="#333"/>`);
  // What a request costs with no queueing at all: the sim's prefill time.
  const floor = b.settings.sim.TTFT_BASE_MS;
  parts.push(`<line x1="${m.left}" x2="${W - m.right}" y1="${y(floor).toFixed(1)}" y2="${y(floor).toFixed(1)}" stroke="#555" stroke-dasharray="5 4"/>`);
  const ly = m.top + plotH + 82;
  parts.push(`<line x1="${m.left}" x2="${m.left + 12}" y1="${ly - 4}" y2="${ly - 4}" stroke="#555" stroke-dasharray="3 2"/>`);
  parts.push(`<text x="${m.left + 18}" y="${ly}">the sim's prefill alone, no queueing (TTFT_BASE_MS = ${floor} ms)</text>`);
  b.runs.forEach((run, k) => {
    const lx = m.left + (k % 2) * (plotW / 2);
    const ly = m.top + plotH + 42 + Math.floor(k / 2) * 20;
    parts.push(`<rect x="${lx}" y="${ly - 10}" width="12" height="12" fill="${colors[run.strategy]}"/>`);
    parts.push(`<text x="${lx + 18}" y="${ly}">${esc(STRATEGIES[run.strategy])}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}

function niceCeil(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const k of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (k * p >= v) return k * p;
  return 10 * p;
}

export function markdown(facts: MachineFacts, o: OverheadResult | undefined, b: BalanceResult | undefined, svgName: string): string {
  const out: string[] = [];
  const targets = evaluateTargets(o, b);
  out.push('# Benchmarks');
  out.push('');
  out.push(
    `Generated by \`${facts.command}\` (${facts.mode} run) on ${facts.date}, measuring commit \`${facts.commit}\`. Every figure below is what the harness measured; the file is rewritten by each run and never edited by hand. Raw numbers: \`tools/bench/results/${facts.mode}.json\`.`,
  );
  out.push('');
  out.push('## Machine');
  out.push('');
  out.push(`- ${facts.nproc} CPUs (\`nproc\`), ${facts.cpuModel}, ${f(facts.memGiB, 1)} GiB RAM; ${facts.os}`);
  out.push(`- Node ${facts.node}; ${Object.entries(facts.tools).map(([k, v]) => `${k} ${v}`).join('; ')}`);
  out.push(`- load average when the run started: ${facts.loadAvgAtStart} (the machine is shared; everything — load generator, proxies, peers, upstreams, Redis — runs on these ${facts.nproc} CPUs over 127.0.0.1)`);
  out.push(`- the whole run took ${int(facts.elapsedS)} s`);
  out.push('');
  out.push('## Running it');
  out.push('');
  out.push('```sh');
  out.push('apt-get update && apt-get install -y nginx haproxy wrk redis-server   # Debian; the peers and the load generator');
  out.push('npm run bench -- --quick   # under 3 minutes: short runs, rewrites this file');
  out.push('npm run bench              # the full run (under 20 minutes)');
  out.push('```');
  out.push('');
  out.push(
    'The harness (`tools/bench`) starts everything itself on free loopback ports — its own `redis-server`, the control plane, the proxies and the sim instances as processes, nginx and HAProxy with configs, pid and log files in a temp dir — and stops all of it when it ends, fails or is interrupted. A peer that is not installed is skipped with a `SKIP` line. Options: `--quick`, `--only overhead|balance`, `--out <file.md>`.',
  );
  out.push('');
  if (targets.length) {
    out.push('## Targets');
    out.push('');
    out.push('| target | goal | measured | met |');
    out.push('|---|---|---|---|');
    for (const t of targets) out.push(`| ${t.name} | ${t.goal} | ${t.measured} | ${t.met === null ? 'n/a' : t.met ? 'yes' : '**no**'} |`);
    out.push('');
  }
  if (o) {
    const s = o.settings;
    out.push('## 1. Proxy overhead against nginx and HAProxy');
    out.push('');
    out.push(
      `One fast upstream (a node http server answering a fixed chat completion, or a fixed 64-chunk SSE stream when the body asks \`"stream":true\`), measured directly and through each proxy. Load: \`wrk\`, one thread, ${s.connections} keep-alive connections (and 1 for the latency table), ${s.durationS} s per cell after a ${s.warmupS} s warm-up per target; cells run scenario by scenario, every target in turn. Switchyard: one proxy process (Redis store, its own \`redis-server\`, the upstream registered through the control plane's \`POST /v1/instances\`, \`least_load\`, \`LOG_LEVEL=warn\`). nginx: \`least_conn\`, 1 worker, upstream keep-alive, \`proxy_buffering off\`, no access log. HAProxy: \`leastconn\`, \`nbthread 1\`, keep-alive, no log. Ratios in parentheses are to nginx. CPU is the serving process's utime+stime from \`/proc/<pid>/stat\` over the cell divided by its requests (nginx: the worker; direct: the upstream itself). "Added" is the difference to the direct row of the same table.`,
    );
    out.push('');
    out.push(`### Non-streaming chat completion, ${s.connections} connections`);
    out.push('');
    out.push(scenarioTable(o, 'json'));
    out.push('');
    out.push('### Non-streaming chat completion, 1 connection (latency with no queueing)');
    out.push('');
    out.push(scenarioTable(o, 'jsonC1'));
    out.push('');
    out.push(`### Streaming, 64 SSE chunks per response, ${s.connections} connections`);
    out.push('');
    out.push(scenarioTable(o, 'sse'));
    out.push('');
    if (o.targets.some((t) => t.rss)) {
      out.push(`### Memory with ${int(s.idleStreams)} open idle SSE streams`);
      out.push('');
      out.push(
        `Each stream: the upstream sends headers and one event, then holds the stream open. The streams are opened through the target with plain node http clients (250 at a time) and spread over 8 ports of the same upstream process, registered as 8 instances (the proxy's undici pool keeps at most 1024 connections per instance; nginx and HAProxy get the same 8 servers). RSS is \`VmRSS\` of \`/proc/<pid>/status\` of the serving process, read 1 s after the upstream counts every stream open; "before" is after the throughput runs above. For the proxy, the last column is the time from the clients' disconnect until the upstream saw every one of its streams closed (the proxy aborts the upstream call when its client leaves; polled every 100 ms).`,
      );
      out.push('');
      out.push(rssTable(o));
      out.push('');
    }
  }
  if (b) {
    const s = b.settings;
    out.push('## 2. Balance quality');
    out.push('');
    out.push(
      `${s.instances} sim instances (\`apps/sim-instance\` processes: \`MAX_BATCH=${s.sim.MAX_BATCH}\`, \`TTFT_BASE_MS=${s.sim.TTFT_BASE_MS}\`, \`TOKEN_MS=${s.sim.TOKEN_MS}\`, \`TOKEN_MS_PER_BATCH=${s.sim.TOKEN_MS_PER_BATCH}\`: a token every ${s.sim.TOKEN_MS} ms alone, ${s.sim.TOKEN_MS + (s.sim.MAX_BATCH - 1) * s.sim.TOKEN_MS_PER_BATCH} ms in a full batch). Output lengths (\`max_tokens\`) are heavy-tailed: uniform ${s.lengths.shortMin}–${s.lengths.shortMax} tokens, and for ${f(s.lengths.longShare * 100, 0)}% of requests ${s.lengths.longFactor}× that (mean ${f(b.capacity.meanOutputTokens, 1)}). Fleet capacity, measured with ${s.sim.MAX_BATCH} closed-loop clients per instance straight to the sims (every batch full, nothing queued) for ${s.capacityS} s: **${f(b.capacity.measuredPerS, 1)} req/s** (the sim's parameters alone predict ${f(b.capacity.formulaPerS, 1)} req/s; the difference is timer and CPU overhead). Arrivals are Poisson at ${s.loads.map((l) => `${Math.round(l * 100)}%`).join(' and ')} of the measured capacity for ${s.durationS} s${s.rounds > 1 ? ` per run, ${s.rounds} rounds (every strategy once per round, the order reversed every other round, a strategy's rounds pooled before taking percentiles)` : ''}, the same seeded arrival times and lengths for every strategy, streamed (\`stream: true\`) and sent to the proxies in turn (request i to proxy i mod P, as a client-side spread would); the first ${s.warmupS} s of arrivals warm the fleet up and are not measured. TTFT is from a request's scheduled send time to its first SSE data chunk (open loop: a late send counts against the system); end-to-end is to the end of the stream. Spread is max − min over the ${s.instances} instances of running + queued (each sim's \`GET /sim/stats\`), sampled every ${s.sampleMs} ms during the measured window. Each run ends when every stream has ended and the sims are empty. Freshly started proxies first get ${s.proxyWarmupS} s of unmeasured short requests at 50% load. "Proxy CPU" is the utime+stime of all the strategy's proxies over the run per request sent; "machine CPU busy" is the share of all ${facts.nproc} CPUs busy (/proc/stat) while requests arrived, whoever used it.`,
    );
    out.push('');
    out.push('Strategies:');
    out.push('');
    out.push(`- **round_robin**: ${s.proxies} proxies, \`ROUTING_STRATEGY=round_robin\`, one shared Redis.`);
    out.push(`- **local least-load**: ${s.proxies} proxies with \`ROUTING_STRATEGY=least_load\`, each with its own \`redis-server\` (instances registered in each with \`RedisLoadStore\`), so each counts only its own requests — what ${s.proxies} nginx replicas with \`least_conn\` do.`);
    out.push(`- **Switchyard least_load**: ${s.proxies} proxies, \`least_load\`, one shared Redis (instances registered through the control plane).`);
    out.push('- **ideal**: one proxy with `least_load` receiving all traffic: a single global least-load scheduler.');
    out.push('');
    out.push(`![p99 TTFT by strategy and load](${svgName})`);
    out.push('');
    s.loads.forEach((load, i) => {
      const r = b.runs[0]?.loads[i];
      out.push(`### ${Math.round(load * 100)}% load (${f(r?.ratePerS, 1)} req/s, ${r?.sent ?? 0} requests sent to each strategy)`);
      out.push('');
      out.push(balanceTable(b, i));
      out.push('');
    });
  }
  return out.join('\n');
}

/**
 * A full run writes the report anew; sections between `<!-- name:begin -->` (or `:start`) and
 * `<!-- name:end -->` markers that it did not write itself (the scale run, hand-written
 * measurements) are carried over from the old report, in their old order, at the end.
 */
export function keepMarkedSections(fresh: string, old: string): string {
  const marker = /<!-- ([a-z0-9-]+):(?:begin|start) -->[\s\S]*?<!-- \1:end -->/g;
  const have = new Set([...fresh.matchAll(marker)].map((m) => m[1]));
  const kept = [...old.matchAll(marker)].filter((m) => !have.has(m[1])).map((m) => m[0]);
  return kept.length === 0 ? fresh : `${fresh.trimEnd()}\n\n${kept.join('\n\n')}\n`;
}
