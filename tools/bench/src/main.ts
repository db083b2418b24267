/**
 * Switchyard's benchmark harness: `npm run bench [-- --quick] [--only overhead|balance|scale|floor] [--out file.md]`.
 * Loopback only, bounded in time, and every process it starts is stopped when it ends.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BalanceResult, BalanceSettings, runBalance, StrategyKey } from './balance';
import { FloorResult, FloorSettings, floorMarkdown, floorTargets, runFloor, spliceFloorSection } from './floor';
import { OverheadResult, OverheadSettings, runOverhead } from './overhead';
import { ProcessGroup, ROOT, which } from './procs';
import { evaluateTargets, keepMarkedSections, MachineFacts, markdown, ttftSvg } from './report';
import { runScale, ScaleResult, ScaleSettings } from './scale';
import { FleetRunSettings, runFleet } from './scale-fleet';
import { SCALE_SVG, scaleMarkdown, scaleSvg, scaleTargets, spliceScale } from './scale-report';

interface Options {
  quick: boolean;
  only?: 'overhead' | 'balance' | 'scale' | 'floor';
  out: string;
}

function parseArgs(argv: string[]): Options {
  const opts: Options = { quick: false, out: path.join(ROOT, 'docs/benchmarks.md') };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = () => inline ?? argv[++i];
    if (flag === '--quick') opts.quick = true;
    else if (flag === '--only') {
      const v = value();
      if (v !== 'overhead' && v !== 'balance' && v !== 'scale' && v !== 'floor') throw new Error(`--only: overhead, balance, scale or floor, not '${v}'`);
      opts.only = v;
    } else if (flag === '--out') opts.out = path.resolve(value());
    else throw new Error(`unknown option '${argv[i]}' (options: --quick, --only overhead|balance|scale|floor, --out <file.md>)`);
  }
  return opts;
}

function settingsFor(quick: boolean): { overhead: OverheadSettings; balance: BalanceSettings; scale: ScaleSettings; fleet: FleetRunSettings; floor: FloorSettings; limitS: number } {
  const balance: BalanceSettings = {
    instances: 8,
    proxies: 4,
    sim: { MAX_BATCH: 8, TTFT_BASE_MS: 30, TOKEN_MS: 20, TOKEN_MS_PER_BATCH: 4 },
    lengths: { shortMin: 2, shortMax: 8, longShare: 0.1, longFactor: 10 },
    loads: [0.7, 0.9],
    durationS: quick ? 5 : 30,
    warmupS: quick ? 1 : 5,
    proxyWarmupS: quick ? 1.5 : 5,
    capacityS: quick ? 3 : 10,
    sampleMs: 100,
    seed: 20_26,
    rounds: quick ? 1 : 2,
  };
  const overhead: OverheadSettings = quick
    ? { connections: 32, durationS: 2, warmupS: 1, idleStreams: 5000, rssTargets: ['switchyard'], withRequestLog: false }
    : { connections: 32, durationS: 10, warmupS: 3, idleStreams: 5000, rssTargets: ['switchyard', 'nginx', 'haproxy'], withRequestLog: true };
  const scale: ScaleSettings = { instances: [8, 64, 256, 1000], clients: [1, 32], cellMs: quick ? 1500 : 5000, rounds: 5 };
  const fleet: FleetRunSettings = { instances: [8, 1000], proxies: 4, connectionsPerProxy: 8, durationS: quick ? 3 : 10, warmupS: quick ? 1 : 3 };
  const floor: FloorSettings = { connections: 32, streams: 300, chunks: 100, chunkMs: 20, durationS: quick ? 3 : 10, warmupS: quick ? 5 : 8, rounds: quick ? 2 : 4, workers: true };
  return { overhead, balance, scale, fleet, floor, limitS: quick ? 500 : 2700 };
}

const STRATEGY_ORDER: StrategyKey[] = ['round_robin', 'local_least_load', 'shared_least_load', 'global_least_load'];

/** A command's stdout and stderr together (nginx -v and haproxy -v differ in which they use). */
function sh(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8' });
  return `${r.stdout ?? ''}${r.stderr ?? ''}`.trim();
}

function machineFacts(mode: 'quick' | 'full', argv: string[]): MachineFacts {
  const dirty = sh('git', ['status', '--porcelain', '--', 'apps', 'libs']).split('\n').filter(Boolean).length;
  const firstLine = (s: string) => s.split('\n')[0];
  const tools: Record<string, string> = {};
  if (which('wrk')) tools.wrk = firstLine(sh('wrk', ['--version'])).split(' ')[1] ?? '?';
  if (which('nginx')) tools.nginx = sh('nginx', ['-v']).replace(/^nginx version: nginx\//, '');
  if (which('haproxy')) tools.HAProxy = firstLine(sh('haproxy', ['-v'])).replace(/^HAProxy version (\S+).*/, '$1');
  tools['redis-server'] = (/v=(\S+)/.exec(sh('redis-server', ['--version'])) ?? [])[1] ?? '?';
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    command: `npm run bench${argv.length ? ' -- ' + argv.join(' ') : ''}`,
    mode,
    commit: `${sh('git', ['rev-parse', '--short', 'HEAD'])}${dirty ? ` + uncommitted changes to ${dirty} file(s) in apps/, libs/` : ''}`,
    nproc: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    memGiB: os.totalmem() / 2 ** 30,
    node: process.version,
    os: `${os.type()} ${os.release()}`,
    loadAvgAtStart: os.loadavg().map((l) => l.toFixed(2)).join(' '),
    tools,
    elapsedS: 0,
  };
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const opts = parseArgs(argv);
  const mode = opts.quick ? 'quick' : 'full';
  const { overhead: oSettings, balance: bSettings, scale: sSettings, fleet: flSettings, floor: fSettings, limitS } = settingsFor(opts.quick);
  const t0 = performance.now();
  const log = (m: string) => console.log(`[bench +${((performance.now() - t0) / 1000).toFixed(0).padStart(3)}s] ${m}`);
  if (!which('wrk') && opts.only !== 'balance' && opts.only !== 'scale') throw new Error('wrk is not installed (apt-get install -y wrk): it is the load generator of the overhead benchmark');
  const facts = machineFacts(mode, argv);
  log(`${mode} run at ${facts.commit}; ${facts.nproc} CPUs, load ${facts.loadAvgAtStart}; time limit ${limitS} s`);
  const started = performance.now();
  const group = new ProcessGroup();
  let exiting = false;
  const abort = async (why: string, code: number) => {
    if (exiting) return;
    exiting = true;
    console.error(`[bench] ${why}: stopping every process it started; their output stays in ${group.dir}`);
    await group.stopAll(true).catch(() => undefined);
    process.exit(code);
  };
  const watchdog = setTimeout(() => void abort(`time limit of ${limitS} s reached`, 2), limitS * 1000);
  watchdog.unref();
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, () => void abort(`got ${signal}`, 130));
  process.once('uncaughtException', (err) => void abort(`uncaught ${err.stack ?? err}`, 1));
  process.once('unhandledRejection', (err) => void abort(`unhandled rejection ${(err as Error)?.stack ?? err}`, 1));

  let overhead: OverheadResult | undefined;
  let balance: BalanceResult | undefined;
  let scale: ScaleResult | undefined;
  let floor: FloorResult | undefined;
  let ok = false;
  try {
    if (opts.only === undefined || opts.only === 'overhead') {
      log('1. overhead: direct, Switchyard, nginx, HAProxy');
      overhead = await runOverhead(group, oSettings, log);
    }
    if (opts.only === undefined || opts.only === 'balance') {
      log(`2. balance: ${bSettings.instances} sims, ${bSettings.proxies} proxies, ${bSettings.loads.map((l) => `${l * 100}%`).join(' and ')} load, ${bSettings.durationS} s each`);
      balance = await runBalance(group, bSettings, STRATEGY_ORDER, log);
    }
    if (opts.only === undefined || opts.only === 'scale') {
      log(`3. scale: old and new selection scripts at ${sSettings.instances.join(', ')} instances, ${sSettings.clients.join(' and ')} clients`);
      scale = await runScale(sSettings, log);
      if (which('wrk')) {
        log(`3b. scale, processes: ${flSettings.proxies} proxies in front of ${flSettings.instances.join(' and ')} instances, one wrk per proxy`);
        scale.fleet = await runFleet(group, flSettings, log);
      } else log('SKIP scale process run: wrk is not installed (apt-get install -y wrk)');
    }
    if (opts.only === undefined || opts.only === 'floor') {
      log('4. floor: the proxy against a minimal node http + undici + pipeline proxy');
      floor = await runFloor(group, fSettings, log);
    }
    ok = true;
  } finally {
    await group.stopAll(!ok);
    if (!ok) console.error(`[bench] every process stopped; their output stays in ${group.dir}`);
  }
  clearTimeout(watchdog);
  facts.elapsedS = (performance.now() - started) / 1000;

  const svgName = 'benchmarks-p99-ttft.svg';
  mkdirSync(path.dirname(opts.out), { recursive: true });
  if (balance) writeFileSync(path.join(path.dirname(opts.out), svgName), ttftSvg(balance, `p99 TTFT by strategy and load (${mode} run, ${facts.date.slice(0, 10)}, ${facts.commit.split(' ')[0]})`));
  const resultsDir = path.join(ROOT, 'tools/bench/results');
  mkdirSync(resultsDir, { recursive: true });
  const floorSection = floor && floorMarkdown(floor, `Measured by \`${facts.command}\` (${mode}) on ${facts.date} at commit \`${facts.commit}\`; ${facts.nproc} CPUs, load ${facts.loadAvgAtStart} at start.`);
  // A scale-only or floor-only run rewrites its own section of the report and keeps the rest.
  const existing = () => (existsSync(opts.out) ? readFileSync(opts.out, 'utf8') : '# Benchmarks\n');
  if (opts.only === 'floor' && floorSection) writeFileSync(opts.out, spliceFloorSection(existing(), floorSection));
  else if (opts.only !== 'scale') writeFileSync(opts.out, keepMarkedSections(markdown(facts, overhead, balance, svgName) + (floorSection ? `\n${floorSection}\n` : '\n'), existing()));
  if (opts.only !== 'scale') writeFileSync(path.join(resultsDir, opts.only === 'floor' ? `floor-${mode}.json` : `${mode}.json`), JSON.stringify({ facts, overhead, balance, floor }, null, 1) + '\n');
  if (scale) {
    const header = `Measured by \`${facts.command}\` (${mode} run) on ${facts.date} at commit \`${facts.commit}\`; load average at the start ${facts.loadAvgAtStart}; raw numbers: \`tools/bench/results/scale-${mode}.json\`.`;
    writeFileSync(opts.out, spliceScale(existing(), scaleMarkdown(scale, header)));
    writeFileSync(path.join(path.dirname(opts.out), SCALE_SVG), scaleSvg(scale, `Selection cost by fleet size (${mode} run, ${facts.date.slice(0, 10)}, ${facts.commit.split(' ')[0]})`));
    writeFileSync(path.join(resultsDir, `scale-${mode}.json`), JSON.stringify({ facts, scale }, null, 1) + '\n');
  }
  for (const t of [...evaluateTargets(overhead, balance), ...(scale ? scaleTargets(scale) : []), ...(floor ? floorTargets(floor) : [])]) log(`target ${t.met === null ? 'SHOWN  ' : t.met ? 'MET    ' : 'NOT MET'} ${t.name}: ${t.goal}; measured ${t.measured}`);
  log(`wrote ${path.relative(ROOT, opts.out)} in ${facts.elapsedS.toFixed(0)} s`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`[bench] failed: ${(err as Error)?.stack ?? err}`);
    process.exit(1);
  },
);
