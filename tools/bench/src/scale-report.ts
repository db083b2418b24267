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

/** The plot's file, beside the report. */
export const SCALE_SVG = 'benchmarks-scale.svg';

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
  out.push(`![Redis script time per request by instances per model, old and new scripts](${SCALE_SVG})`);
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

/** The plot beside the scale table: Redis script time per request against instances per model, log-log, old and new scripts, one line per client count. */
export function scaleSvg(r: ScaleResult, title: string): string {
  const W = 760;
  const H = 420;
  const m = { top: 48, right: 180, bottom: 56, left: 72 };
  const plotW = W - m.left - m.right;
  const plotH = H - m.top - m.bottom;
  const cells = r.cells.filter((c) => c.scheme !== 'floor' && c.scriptUsPerRequest > 0);
  const lo = Math.pow(10, Math.floor(Math.log10(Math.min(r.floorUsPerRequest > 0 ? r.floorUsPerRequest : 1, ...cells.map((c) => c.scriptUsPerRequest)))));
  const hi = Math.pow(10, Math.ceil(Math.log10(Math.max(10, ...cells.map((c) => c.scriptUsPerRequest)))));
  const nMin = Math.min(...r.settings.instances);
  const nMax = Math.max(...r.settings.instances);
  const x = (n: number) => m.left + (Math.log10(n / nMin) / Math.log10(nMax / nMin || 10)) * plotW;
  const y = (v: number) => m.top + plotH - (Math.log10(v / lo) / Math.log10(hi / lo)) * plotH;
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    `<text x="${(m.left + plotW / 2).toFixed(0)}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`,
  ];
  for (let v = lo; v <= hi * 1.0001; v *= 10) {
    parts.push(`<line x1="${m.left}" x2="${m.left + plotW}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#ddd"/>`);
    parts.push(`<text x="${m.left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${v >= 1000 ? `${v / 1000} ms` : `${v} µs`}</text>`);
  }
  for (const n of r.settings.instances) {
    parts.push(`<line x1="${x(n).toFixed(1)}" x2="${x(n).toFixed(1)}" y1="${m.top}" y2="${m.top + plotH}" stroke="#eee"/>`);
    parts.push(`<text x="${x(n).toFixed(1)}" y="${m.top + plotH + 18}" text-anchor="middle">${n.toLocaleString('en-US')}</text>`);
  }
  parts.push(`<text x="${(m.left + plotW / 2).toFixed(0)}" y="${H - 12}" text-anchor="middle">instances serving the model</text>`);
  parts.push(`<text transform="translate(18 ${m.top + plotH / 2}) rotate(-90)" text-anchor="middle">Redis script time per request</text>`);
  // The cost target: 40 µs per request.
  parts.push(`<line x1="${m.left}" x2="${m.left + plotW}" y1="${y(40).toFixed(1)}" y2="${y(40).toFixed(1)}" stroke="#2ca02c" stroke-dasharray="6 4"/>`);
  const series: { scheme: 'old' | 'new'; clients: number; color: string; dash: string }[] = [];
  for (const clients of r.settings.clients) {
    series.push({ scheme: 'old', clients, color: '#d62728', dash: clients > 1 ? '4 3' : '' });
    series.push({ scheme: 'new', clients, color: '#1f77b4', dash: clients > 1 ? '4 3' : '' });
  }
  series.forEach((s, k) => {
    const pts = r.settings.instances
      .map((n) => cells.find((c) => c.scheme === s.scheme && c.instances === n && c.clients === s.clients))
      .filter((c): c is ScaleCell => c !== undefined)
      .map((c) => `${x(c.instances).toFixed(1)},${y(c.scriptUsPerRequest).toFixed(1)}`);
    if (pts.length) parts.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2" ${s.dash ? `stroke-dasharray="${s.dash}"` : ''} points="${pts.join(' ')}"/>`);
    const ly = m.top + 10 + k * 20;
    parts.push(`<line x1="${m.left + plotW + 14}" x2="${m.left + plotW + 44}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2" ${s.dash ? `stroke-dasharray="${s.dash}"` : ''}/>`);
    parts.push(`<text x="${m.left + plotW + 50}" y="${ly + 4}">${s.scheme}, ${s.clients} client${s.clients > 1 ? 's' : ''}</text>`);
  });
  const ly = m.top + 10 + series.length * 20;
  parts.push(`<line x1="${m.left + plotW + 14}" x2="${m.left + plotW + 44}" y1="${ly}" y2="${ly}" stroke="#2ca02c" stroke-dasharray="6 4"/>`);
  parts.push(`<text x="${m.left + plotW + 50}" y="${ly + 4}">target 40 µs</text>`);
  parts.push('</svg>');
  return parts.join('\n');
}
