import type { ScaleCell, ScaleResult } from './scale';

export interface ScaleTarget {
  name: string;
  goal: string;
  measured: string;
  met: boolean;
}

const BEGIN = '<!-- scale:begin -->';
const END = '<!-- scale:end -->';

const us = (x: number) => (x >= 100 ? Math.round(x).toLocaleString('en-US') : x.toFixed(1));
const rate = (x: number) => Math.round(x).toLocaleString('en-US');

function cell(r: ScaleResult, scheme: ScaleCell['scheme'], instances: number, clients: number): ScaleCell | undefined {
  return r.cells.find((c) => c.scheme === scheme && c.instances === instances && c.clients === clients);
}

/** Issue 12's cost targets, judged on the current scripts in this run. */
export function scaleTargets(r: ScaleResult): ScaleTarget[] {
  const most = Math.max(...r.settings.instances);
  const fewest = Math.min(...r.settings.instances);
  const out: ScaleTarget[] = [];
  for (const clients of r.settings.clients) {
    const big = cell(r, 'new', most, clients);
    const small = cell(r, 'new', fewest, clients);
    if (!big || !small) continue;
    out.push({
      name: `Redis CPU per request at ${most.toLocaleString('en-US')} instances, ${clients} client${clients > 1 ? 's' : ''}`,
      goal: '≤ 40 µs (scripts, INFO commandstats)',
      measured: `${us(big.scriptUsPerRequest)} µs`,
      met: big.scriptUsPerRequest <= 40,
    });
    const ratio = big.scriptUsPerRequest / small.scriptUsPerRequest;
    out.push({
      name: `cost at ${most.toLocaleString('en-US')} vs ${fewest} instances, ${clients} client${clients > 1 ? 's' : ''}`,
      goal: '≤ 1.5×',
      measured: `${ratio.toFixed(2)}× (${us(big.scriptUsPerRequest)} vs ${us(small.scriptUsPerRequest)} µs)`,
      met: ratio <= 1.5,
    });
  }
  return out;
}

export function scaleMarkdown(r: ScaleResult, header: string): string {
  const out: string[] = [BEGIN, '## Selection at fleet scale (`--only scale`)', '', header, ''];
  out.push(
    `One model served by N instances on one redis-server ${r.redisVersion}; each client is a store connection with its own proxy id running least_load acquire → release pairs back to back for ${(r.settings.cellMs / 1000).toFixed(1)} s per cell, in ${r.settings.rounds} rounds of which the cheapest is shown (the machine is shared: the cheapest round is the least disturbed). ` +
      '**old** is the pre-issue-12 ACQUIRE (reads every instance of the model on every call; kept in `tools/bench/src/scale-baseline.ts`), **new** is `RedisLoadStore` (sorted-set index). ' +
      '"scripts" is Redis\'s own time in the two scripts a proxied request causes (INFO commandstats usec of EVALSHA/EVAL, which includes every command they call), divided by requests; ' +
      '"redis CPU" is the server process\'s user+sys CPU over the same cell (adds parsing, replies and the event loop). Lease renewals (one per proxy per second) and reconciles are left out: per request they round to 0. ' +
      'Both schemes run in the same process on the same shared 2-CPU machine, so compare them within a row. ' +
      `For scale: two do-nothing scripts per request (EVALSHA of \`return 1\`) measured ${us(r.floorUsPerRequest)} µs/request in this run.`,
  );
  out.push('');
  out.push('| instances | clients | old: scripts µs/request | old: redis CPU µs/request | old: requests/s | new: scripts µs/request | new: redis CPU µs/request | new: requests/s |');
  out.push('|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const instances of r.settings.instances) {
    for (const clients of r.settings.clients) {
      const o = cell(r, 'old', instances, clients);
      const n = cell(r, 'new', instances, clients);
      const cols = (c?: ScaleCell) => (c ? [us(c.scriptUsPerRequest), us(c.processCpuUsPerRequest), rate(c.perSecond)] : ['–', '–', '–']);
      out.push(`| ${instances.toLocaleString('en-US')} | ${clients} | ${cols(o).join(' | ')} | ${cols(n).join(' | ')} |`);
    }
  }
  out.push('');
  const targets = scaleTargets(r);
  if (targets.length) {
    out.push('| target | goal | measured | met |');
    out.push('|---|---|---|---|');
    for (const t of targets) out.push(`| ${t.name} | ${t.goal} | ${t.measured} | ${t.met ? 'yes' : '**no**'} |`);
    out.push('');
  }
  if (r.fleet?.length) {
    out.push(
      `Process run: ${r.fleet[0].proxies} proxy processes (least_load, one shared Redis) in front of N registered instances that one fast upstream process serves, one single-thread wrk per proxy (JSON chat completions); "Redis scripts" sums every script the run caused (acquires, releases, lease renewals, reconciles, registry syncs) per proxied request. Everything shares the 2 CPUs, so requests/s is bounded by the proxies and wrk, not by Redis.`,
    );
    out.push('');
    out.push('| instances | proxies | requests/s | p99 (worst proxy) | errors | Redis scripts µs/request | scripts/request |');
    out.push('|---:|---:|---:|---:|---:|---:|---:|');
    for (const f of r.fleet) out.push(`| ${f.instances.toLocaleString('en-US')} | ${f.proxies} | ${rate(f.rps)} | ${f.p99Ms.toFixed(1)} ms | ${f.errors} | ${us(f.scriptUsPerRequest)} | ${f.scriptsPerRequest.toFixed(2)} |`);
    out.push('');
  }
  out.push(END);
  return out.join('\n');
}

/** Puts the scale section into an existing report, replacing an earlier one, so `--only scale` keeps the other sections. */
export function spliceScale(existing: string, section: string): string {
  const a = existing.indexOf(BEGIN);
  const b = existing.indexOf(END);
  if (a >= 0 && b > a) return existing.slice(0, a) + section + existing.slice(b + END.length);
  return `${existing.trimEnd()}\n\n${section}\n`;
}
