import type { ApiKeyView, DebugStatusResponse, InstanceLoadsResponse, InstanceLoadView } from '@switchyard/contracts';
import type { Readiness } from './client';

/** Null is unknown and shows as '-'; a measured 0 shows as 0 (DESIGN.md invariant 8). */
export const UNKNOWN = '-';

export function formatNumber(value: number | null): string {
  if (value === null) return UNKNOWN;
  return Number.isInteger(value) ? String(value) : value.toFixed(2).replace(/0+$/, '').replace(/\.$/, '');
}

export function formatPercent(value: number | null): string {
  return value === null ? UNKNOWN : `${formatNumber(value)}%`;
}

/** Age of a timestamp relative to when the control plane answered, so local clock skew does not show. */
export function formatAge(at: string, now: string): string {
  const seconds = Math.max(0, Math.floor((Date.parse(now) - Date.parse(at)) / 1000));
  if (!Number.isFinite(seconds)) return UNKNOWN;
  if (seconds < 120) return `${seconds}s ago`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 172_800) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86_400)}d ago`;
}

function byProxy(counts: Record<string, number>): string {
  const parts = Object.entries(counts)
    .filter(([, n]) => n !== 0)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([proxy, n]) => `${proxy}=${n}`);
  return parts.length ? parts.join(',') : UNKNOWN;
}

interface Column {
  title: string;
  right?: boolean;
  cell: (i: InstanceLoadView, now: string) => string;
}

const BASE_COLUMNS: Column[] = [
  { title: 'ID', cell: (i) => i.instance_id },
  { title: 'MODELS', cell: (i) => i.models.join(',') },
  { title: 'ALIVE', cell: (i) => (i.alive ? 'yes' : 'expired') },
  { title: 'INFLIGHT', right: true, cell: (i) => String(i.inflight) },
];

const VERBOSE_COLUMNS: Column[] = [
  { title: 'MAX', right: true, cell: (i) => formatNumber(i.max_inflight) },
  { title: 'WEIGHT', right: true, cell: (i) => formatNumber(i.weight) },
  { title: 'BY PROXY', cell: (i) => byProxy(i.inflight_by_proxy) },
  { title: 'QUEUED', right: true, cell: (i) => String(Object.values(i.queued_by_proxy).reduce((a, b) => a + b, 0)) },
  { title: 'ENGINE', cell: (i) => (i.engine.scrape_error ? `${i.engine.engine}!` : i.engine.engine) },
  { title: 'RUNNING', right: true, cell: (i) => formatNumber(i.engine.running) },
  { title: 'WAITING', right: true, cell: (i) => formatNumber(i.engine.waiting) },
  { title: 'KV', right: true, cell: (i) => formatPercent(i.engine.kv_cache_usage === null ? null : Math.round(i.engine.kv_cache_usage * 1000) / 10) },
];

const TAIL_COLUMNS: Column[] = [
  { title: 'QPS_1M', right: true, cell: (i) => formatNumber(i.qps_1m) },
  { title: 'GPU_UTIL', right: true, cell: (i) => formatPercent(i.gpu_util) },
  { title: 'LAST SEEN', cell: (i, now) => formatAge(i.last_seen_at, now) },
];

/** The `instances` table, sorted by id; with verbose also limits, weight, per-proxy counts, queue and URL. */
export function formatInstances(view: InstanceLoadsResponse, verbose: boolean): string {
  if (view.instances.length === 0) return 'no instances\n';
  const columns = verbose ? [...BASE_COLUMNS, ...VERBOSE_COLUMNS, ...TAIL_COLUMNS, { title: 'URL', cell: (i: InstanceLoadView) => i.url }] : [...BASE_COLUMNS, ...TAIL_COLUMNS];
  const instances = [...view.instances].sort((a, b) => a.instance_id.localeCompare(b.instance_id));
  const rows = [columns.map((c) => c.title), ...instances.map((i) => columns.map((c) => c.cell(i, view.generated_at)))];
  const widths = columns.map((_, k) => Math.max(...rows.map((r) => r[k].length)));
  return rows
    .map((r) =>
      r
        .map((cell, k) => (columns[k].right ? cell.padStart(widths[k]) : cell.padEnd(widths[k])))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
    .concat('\n');
}

/** One summary line over a view: the counts `watch` shows above the table. */
export function formatSummary(view: InstanceLoadsResponse): string {
  const alive = view.instances.filter((i) => i.alive).length;
  const expired = view.instances.length - alive;
  const inflight = view.instances.reduce((sum, i) => sum + i.inflight, 0);
  const proxies = view.proxies.filter((p) => p.alive).length;
  const queued = view.proxies.reduce((sum, p) => sum + Object.values(p.queued).reduce((a, b) => a + b, 0), 0);
  return `instances ${alive} alive${expired ? `, ${expired} expired` : ''}  proxies ${proxies} alive  in flight ${inflight}  queued ${queued}`;
}

export function formatStatus(url: string, ready: Readiness, status: DebugStatusResponse): string {
  const health = ready.ready ? `ready (store ${ready.store})` : `NOT READY (store ${ready.store}${ready.detail ? `: ${ready.detail}` : ''})`;
  const lines: [string, string][] = [
    ['control plane', `${url}  ${health}`],
    ['instances', `${status.instances.alive} alive, ${status.instances.expired} expired`],
    ['proxies', `${status.proxies.alive} alive, ${status.proxies.expired} expired, ${status.proxies.draining} draining`],
    ['in flight', String(status.inflight_total)],
    ['queued', String(status.queued_total)],
  ];
  return lines.map(([k, v]) => `${k.padEnd(15)}${v}`).join('\n') + '\n';
}

/** A limit and what is used of it this minute: `3/10`, or `3` with no limit. */
const usedOf = (used: number, limit: number | null) => (limit === null ? String(used) : `${used}/${limit}`);

/** The `keys list` table: never a secret (the read routes have none), only the prefix. */
export function formatKeys(keys: ApiKeyView[]): string {
  if (keys.length === 0) return 'no API keys\n';
  const head = ['ID', 'NAME', 'PREFIX', 'MODELS', 'REQUESTS/MIN', 'TOKENS/MIN', 'SOURCE'];
  const rows = [head, ...keys.map((k) => [k.id, k.name, `${k.prefix}…`, k.models ? k.models.join(',') : '*', usedOf(k.usage.requests, k.rpm), usedOf(k.usage.tokens, k.tpm), k.source])];
  const widths = head.map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows.map((r) => r.map((cell, c) => cell.padEnd(widths[c])).join('  ').trimEnd()).join('\n') + '\n';
}
