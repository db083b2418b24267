import { readFileSync } from 'node:fs';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, RedisServer } from '@switchyard/testing';
import { Endpoint, InstanceSpec, registerInRedis, registerViaControlPlane, startControlPlane, startProxy, startRedis } from './fleet';
import { getJson, post, until } from './http-util';
import { CLOCK_TICKS, ProcessGroup } from './procs';
import { busyShare, cpuTicksFromStat, LengthMix, mean, meanOutputLength, outputLength, percentile, poissonArrivals, seededRandom, SpreadSummary, summarizeSpreads } from './stats';

export type StrategyKey = 'round_robin' | 'local_least_load' | 'shared_least_load' | 'global_least_load';

export const STRATEGIES: Record<StrategyKey, string> = {
  round_robin: 'round_robin, shared Redis, 4 proxies',
  local_least_load: 'least_load, a Redis per proxy (4 × local least-conn)',
  shared_least_load: 'Switchyard least_load, shared Redis, 4 proxies',
  global_least_load: 'ideal: one global least-load scheduler (1 proxy)',
};

export interface SimParams {
  MAX_BATCH: number;
  TTFT_BASE_MS: number;
  TOKEN_MS: number;
  TOKEN_MS_PER_BATCH: number;
}

export interface BalanceSettings {
  instances: number;
  proxies: number;
  sim: SimParams;
  lengths: LengthMix;
  loads: number[];
  durationS: number;
  /** Requests sent before this are load, not measurement (the fleet starts empty). */
  warmupS: number;
  /** Unmeasured short requests at half load through freshly started proxies before their first measured run. */
  proxyWarmupS: number;
  capacityS: number;
  sampleMs: number;
  seed: number;
  /** Every strategy runs once per round, in reverse order every other round; a strategy's rounds are pooled. */
  rounds: number;
}

export interface LoadResult {
  load: number;
  ratePerS: number;
  sent: number;
  measured: number;
  errors: number;
  ttftP50Ms: number;
  ttftP99Ms: number;
  /** p99 TTFT of each round alone, to show how much it moves between arrival sequences. */
  ttftP99ByRound: number[];
  e2eP50Ms: number;
  e2eP99Ms: number;
  spread: SpreadSummary;
  meanInflight: number;
  /** Share of the machine's CPU busy while requests arrived (everything: harness, proxies, sims, Redis, other tenants). */
  machineBusy: number;
  /** CPU time of all the strategy's proxies over the run, per request sent. */
  proxyCpuUsPerReq: number;
}

export interface BalanceResult {
  settings: BalanceSettings;
  capacity: { formulaPerS: number; measuredPerS: number; usedPerS: number; meanOutputTokens: number };
  runs: Array<{ strategy: StrategyKey; loads: LoadResult[] }>;
}

const MODEL = 'sim-llama';
const PATH = '/v1/chat/completions';
const body = (maxTokens: number) => JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'Write a haiku about switchyards.' }], max_tokens: maxTokens, stream: true });

/** Saturation throughput from the sim's own model: every slot busy, every token at full-batch speed. */
export function formulaCapacity(s: Pick<BalanceSettings, 'instances' | 'sim' | 'lengths'>): number {
  const n = meanOutputLength(s.lengths);
  const perRequestMs = s.sim.TTFT_BASE_MS + (n - 1) * (s.sim.TOKEN_MS + (s.sim.MAX_BATCH - 1) * s.sim.TOKEN_MS_PER_BATCH);
  return (s.instances * s.sim.MAX_BATCH * 1000) / perRequestMs;
}

export async function runBalance(group: ProcessGroup, settings: BalanceSettings, order: StrategyKey[], log: (m: string) => void): Promise<BalanceResult> {
  const sims: InstanceSpec[] = [];
  await Promise.all(
    Array.from({ length: settings.instances }, async (_, i) => {
      const port = await freePort();
      const env = { PORT: String(port), HOST: '127.0.0.1', MODEL, ...Object.fromEntries(Object.entries(settings.sim).map(([k, v]) => [k, String(v)])) };
      const proc = group.node(`sim-${i}`, 'apps/sim-instance/src/main.ts', env);
      await group.waitForPort(proc, port);
      sims[i] = { instance_id: `sim-${i}`, url: `http://127.0.0.1:${port}`, models: [MODEL] };
    }),
  );
  const meanOutputTokens = meanOutputLength(settings.lengths);
  const formulaPerS = formulaCapacity(settings);
  const measuredPerS = await measureCapacity(sims, settings);
  const usedPerS = measuredPerS;
  log(`fleet capacity: ${measuredPerS.toFixed(1)} req/s measured (saturated closed loop), ${formulaPerS.toFixed(1)} req/s from the sim's parameters`);

  const shared = await startRedis(group);
  const cp = await startControlPlane(group, shared.url);
  await registerViaControlPlane(cp.url, sims);

  const raw = new Map<StrategyKey, RawLoad[][]>(order.map((k) => [k, settings.loads.map(() => [])]));
  for (let round = 0; round < settings.rounds; round++) {
    for (const strategy of round % 2 === 0 ? order : [...order].reverse()) {
      // A proxy that exits mid-run spoils the run: its output is shown, and the round is run again on fresh proxies once.
      for (let attempt = 1; ; attempt++) {
        try {
          const results = await runStrategyRound(group, strategy, settings, shared.url, sims, usedPerS, round, log);
          results.forEach((r, li) => raw.get(strategy)?.[li].push(r));
          break;
        } catch (err) {
          if (!(err instanceof ProxyExited) || attempt >= 2) throw err;
          log(`${(err as Error).message}\nretrying ${strategy} round ${round + 1} on fresh proxies in 10 s`);
          await sleep(10_000);
        }
      }
    }
  }
  const runs = order.map((strategy) => ({ strategy, loads: settings.loads.map((load, li) => summarizeLoad(load, raw.get(strategy)?.[li] ?? [])) }));
  return { settings, capacity: { formulaPerS, measuredPerS, usedPerS, meanOutputTokens }, runs };
}

class ProxyExited extends Error {}

/** One strategy's runs of one round: fresh proxies, a warm-up, then every load level. */
async function runStrategyRound(
  group: ProcessGroup,
  strategy: StrategyKey,
  settings: BalanceSettings,
  sharedRedis: string,
  sims: InstanceSpec[],
  usedPerS: number,
  round: number,
  log: (m: string) => void,
): Promise<RawLoad[]> {
  const { proxies, stop } = await startStrategy(group, strategy, settings, sharedRedis, sims);
  try {
    const urls = proxies.map((p) => p.url);
    const pids = proxies.map((p) => p.proc.pid);
    const checkAlive = () => {
      const dead = proxies.find((p) => p.proc.exited);
      if (dead) throw new ProxyExited(`${dead.proc.name} exited during the run; its last output:\n${dead.proc.tail()}`);
    };
    const shortOnly = { ...settings.lengths, longShare: 0 };
    await runLoad(urls, pids, sims, { load: 0.5, ratePerS: usedPerS * 0.5, seed: settings.seed - 1, durationS: settings.proxyWarmupS, warmupS: settings.proxyWarmupS, lengths: shortOnly, sampleMs: settings.sampleMs }, checkAlive);
    const out: RawLoad[] = [];
    for (const [li, load] of settings.loads.entries()) {
      // The same seed for every strategy within a round: the same arrival times and lengths.
      const seed = settings.seed + 1000 * round + li;
      const r = await runLoad(urls, pids, sims, { load, ratePerS: usedPerS * load, seed, durationS: settings.durationS, warmupS: settings.warmupS, lengths: settings.lengths, sampleMs: settings.sampleMs }, checkAlive);
      out.push(r);
      const x = summarizeLoad(load, [r]);
      log(
        `${settings.rounds > 1 ? `round ${round + 1} ` : ''}${strategy.padEnd(17)} ${(load * 100).toFixed(0)}%  ${x.measured} req  TTFT p50 ${x.ttftP50Ms.toFixed(0)} p99 ${x.ttftP99Ms.toFixed(0)} ms  e2e p50 ${x.e2eP50Ms.toFixed(0)} p99 ${x.e2eP99Ms.toFixed(0)} ms  spread mean ${x.spread.mean.toFixed(2)} max ${x.spread.max}  proxies ${x.proxyCpuUsPerReq.toFixed(0)} µs/req  machine ${(x.machineBusy * 100).toFixed(0)}% busy  errors ${x.errors}`,
      );
    }
    return out;
  } finally {
    await stop();
  }
}

/** What one run measured, kept raw so that rounds can be pooled before taking percentiles. */
interface RawLoad {
  ratePerS: number;
  sent: number;
  errors: number;
  ttft: number[];
  e2e: number[];
  samples: number[][];
  machineBusy: number;
  proxyCpuUs: number;
}

function summarizeLoad(load: number, runs: RawLoad[]): LoadResult {
  const all = <T>(pick: (r: RawLoad) => T[]) => runs.flatMap(pick);
  const ttft = all((r) => r.ttft);
  const e2e = all((r) => r.e2e);
  const samples = all((r) => r.samples);
  const sent = runs.reduce((a, r) => a + r.sent, 0);
  return {
    load,
    ratePerS: mean(runs.map((r) => r.ratePerS)),
    sent,
    measured: ttft.length,
    errors: runs.reduce((a, r) => a + r.errors, 0),
    ttftP50Ms: percentile(ttft, 50),
    ttftP99Ms: percentile(ttft, 99),
    ttftP99ByRound: runs.map((r) => percentile(r.ttft, 99)),
    e2eP50Ms: percentile(e2e, 50),
    e2eP99Ms: percentile(e2e, 99),
    spread: summarizeSpreads(samples),
    meanInflight: mean(samples.map((c) => c.reduce((a, b) => a + b, 0))),
    machineBusy: mean(runs.map((r) => r.machineBusy)),
    proxyCpuUsPerReq: runs.reduce((a, r) => a + r.proxyCpuUs, 0) / Math.max(1, sent),
  };
}

async function startStrategy(
  group: ProcessGroup,
  strategy: StrategyKey,
  s: BalanceSettings,
  sharedRedis: string,
  sims: InstanceSpec[],
): Promise<{ proxies: Endpoint[]; stop: () => Promise<void> }> {
  const privateRedis: RedisServer[] = [];
  let proxies: Endpoint[];
  if (strategy === 'local_least_load') {
    // Each proxy counts only its own requests, as independent least-conn balancers do.
    proxies = await Promise.all(
      Array.from({ length: s.proxies }, async (_, i) => {
        const redis = await new RedisServer().start();
        group.onStop(() => redis.stop());
        privateRedis.push(redis);
        await registerInRedis(redis.url, sims);
        return startProxy(group, `${strategy}-${i}`, redis.url, 'least_load', { LOG_LEVEL: 'warn' });
      }),
    );
  } else {
    const n = strategy === 'global_least_load' ? 1 : s.proxies;
    const env = strategy === 'round_robin' ? 'round_robin' : 'least_load';
    proxies = await Promise.all(Array.from({ length: n }, (_, i) => startProxy(group, `${strategy}-${i}`, sharedRedis, env, { LOG_LEVEL: 'warn' })));
  }
  for (const p of proxies) await until(`${p.url} to route`, async () => (await post(p.url + PATH, body(1))).status === 200);
  return {
    proxies,
    stop: async () => {
      await Promise.all(proxies.map((p) => group.stop(p.proc)));
      await Promise.all(privateRedis.map((r) => r.stop()));
    },
  };
}

interface Sample {
  counts: number[];
}

/** Reads every sim's running + queued (its in-flight as the instance sees it). */
async function sampleSims(sims: InstanceSpec[]): Promise<Sample> {
  const stats = await Promise.all(sims.map((s) => getJson<{ running: number; queued: number }>(`${s.url}/sim/stats`)));
  return { counts: stats.map((x) => x.running + x.queued) };
}

interface LoadSpec {
  load: number;
  ratePerS: number;
  seed: number;
  durationS: number;
  warmupS: number;
  lengths: LengthMix;
  sampleMs: number;
}

const procCpuTicks = (pids: number[]) => pids.reduce((sum, pid) => sum + cpuTicksFromStat(readFileSync(`/proc/${pid}/stat`, 'utf8')), 0);

/** Open-loop Poisson load at `ratePerS`, spread over the proxies request by request; latencies from each request's scheduled send time. */
async function runLoad(proxyUrls: string[], proxyPids: number[], sims: InstanceSpec[], spec: LoadSpec, checkAlive: () => void): Promise<RawLoad> {
  const { ratePerS } = spec;
  const rand = seededRandom(spec.seed);
  const durationMs = spec.durationS * 1000;
  const warmupMs = spec.warmupS * 1000;
  const arrivals = poissonArrivals(ratePerS, durationMs, rand);
  const lengths = arrivals.map(() => outputLength(spec.lengths, rand));
  checkAlive();
  const cpuBefore = procCpuTicks(proxyPids);
  let statBefore = '';
  let statAfter = '';
  const agents = proxyUrls.map(() => new http.Agent({ keepAlive: true, maxSockets: Infinity }));
  const ttft: number[] = [];
  const e2e: number[] = [];
  let errors = 0;
  const samples: Sample[] = [];
  const t0 = performance.now();

  let sampling = false;
  const sampler = setInterval(() => {
    const at = performance.now() - t0;
    if (at >= warmupMs && !statBefore) statBefore = readFileSync('/proc/stat', 'utf8');
    if (at > durationMs && !statAfter) statAfter = readFileSync('/proc/stat', 'utf8');
    if (sampling || at < warmupMs || at > durationMs) return;
    sampling = true;
    void sampleSims(sims)
      .then((x) => samples.push(x))
      .catch(() => undefined)
      .finally(() => (sampling = false));
  }, spec.sampleMs);

  const send = (i: number): Promise<void> =>
    new Promise((resolve) => {
      const scheduled = t0 + arrivals[i];
      const counted = arrivals[i] >= warmupMs;
      const payload = body(lengths[i]);
      let first = -1;
      const fail = () => {
        if (counted) errors += 1;
        resolve();
      };
      const req = http.request(
        proxyUrls[i % proxyUrls.length] + PATH,
        { method: 'POST', agent: agents[i % agents.length], headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } },
        (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            return fail();
          }
          res.on('data', () => {
            if (first < 0) first = performance.now();
          });
          res.on('end', () => {
            if (counted) {
              ttft.push(first - scheduled);
              e2e.push(performance.now() - scheduled);
            }
            resolve();
          });
          res.on('error', fail);
        },
      );
      req.setTimeout(120_000, () => req.destroy(new Error('timeout')));
      req.on('error', fail);
      req.end(payload);
    });

  const pending: Promise<void>[] = [];
  await new Promise<void>((resolve) => {
    let i = 0;
    const tick = () => {
      const now = performance.now() - t0;
      while (i < arrivals.length && arrivals[i] <= now) pending.push(send(i++));
      if (i >= arrivals.length) return resolve();
      setTimeout(tick, Math.max(0, arrivals[i] - (performance.now() - t0)));
    };
    tick();
  });
  statAfter ||= readFileSync('/proc/stat', 'utf8');
  await Promise.all(pending);
  clearInterval(sampler);
  checkAlive();
  const proxyCpuUs = ((procCpuTicks(proxyPids) - cpuBefore) / CLOCK_TICKS) * 1e6;
  for (const a of agents) a.destroy();
  // The next run starts from an empty fleet.
  await until('the sims to drain', async () => (await sampleSims(sims)).counts.every((c) => c === 0), 30_000);
  await sleep(200);
  return {
    ratePerS,
    sent: arrivals.length,
    errors,
    ttft,
    e2e,
    samples: samples.map((x) => x.counts),
    machineBusy: statBefore ? busyShare(statBefore, statAfter) : NaN,
    proxyCpuUs,
  };
}

/**
 * Saturation throughput, measured: MAX_BATCH closed-loop clients per sim, straight to it, so
 * every batch stays full and nothing queues; tokens per second over the window, divided by the
 * mean output length, is the fleet's capacity in requests per second.
 */
async function measureCapacity(sims: InstanceSpec[], s: BalanceSettings): Promise<number> {
  const rand = seededRandom(s.seed ^ 0x5eed);
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const start = performance.now();
  const windowFrom = start + 1000;
  const end = windowFrom + s.capacityS * 1000;
  let tokens = 0;
  const open = new Set<http.ClientRequest>();
  // Requests still running at the end are cut, so the measurement stops on time.
  const cut = setTimeout(() => open.forEach((r) => r.destroy()), end - start);
  const one = (url: string, maxTokens: number) =>
    new Promise<void>((resolve) => {
      const payload = body(maxTokens);
      const req = http.request(url + PATH, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } }, (res) => {
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const now = performance.now();
          if (now < windowFrom || now > end) return;
          for (let at = chunk.indexOf('"content"'); at >= 0; at = chunk.indexOf('"content"', at + 1)) tokens += 1;
        });
        res.on('end', resolve);
        res.on('error', () => resolve());
      });
      req.on('error', () => resolve());
      req.on('close', () => open.delete(req));
      open.add(req);
      req.end(payload);
    });
  await Promise.all(
    sims.flatMap((sim) =>
      Array.from({ length: s.sim.MAX_BATCH }, async () => {
        while (performance.now() < end) await one(sim.url, outputLength(s.lengths, rand));
      }),
    ),
  );
  clearTimeout(cut);
  agent.destroy();
  return tokens / s.capacityS / meanOutputLength(s.lengths);
}
