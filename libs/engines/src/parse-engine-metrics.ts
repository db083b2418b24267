import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import type { EngineKind, EngineSignals } from '@switchyard/contracts';

/** What one scrape of an engine's /metrics says; the prober adds scraped_at and scrape_error. */
export type EngineMetrics = Pick<EngineSignals, 'engine' | 'running' | 'waiting' | 'kv_cache_usage'>;

/** The page was not Prometheus text (HTML, JSON, a truncated body): the prober records it as scrape_error. */
export class EngineMetricsError extends Error {
  override readonly name = 'EngineMetricsError';
}

interface EngineNames {
  prefix: string;
  running: readonly string[];
  waiting: readonly string[];
  /** KV-cache usage, already a 0..1 ratio in every engine below; first present name wins. */
  kv: readonly string[];
}

/**
 * The metric names each engine exports, from its own source and docs:
 * - vLLM (vllm/v1/metrics/loggers.py): gauges labelled {engine, model_name}. `vllm:kv_cache_usage_perc`
 *   is documented "KV-cache usage. 1 means 100 percent usage." and is set from the scheduler's
 *   kv_cache_usage fraction (the log line multiplies it by 100), so despite `_perc` it is 0..1;
 *   `vllm:gpu_cache_usage_perc` is the same number under its pre-0.9 name (hidden since 0.10).
 * - SGLang (python/sglang/srt/metrics/collector.py): gauges labelled {engine_type, model_name,
 *   tp_rank, pp_rank, moe_ep_rank[, dp_rank]}; `sglang:token_usage` is used KV tokens / pool size.
 * - llama.cpp server (`--metrics`): unlabelled; `llamacpp:kv_cache_usage_ratio` ("1 means 100
 *   percent usage") exists only in builds before the unified-cache rework, so current builds give null.
 * - TGI (docs/source/reference/metrics.md): unlabelled gauges, no KV-cache figure.
 */
const ENGINES: ReadonlyArray<readonly [Exclude<EngineKind, 'unknown'>, EngineNames]> = [
  ['vllm', { prefix: 'vllm:', running: ['vllm:num_requests_running'], waiting: ['vllm:num_requests_waiting'], kv: ['vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc'] }],
  ['sglang', { prefix: 'sglang:', running: ['sglang:num_running_reqs'], waiting: ['sglang:num_queue_reqs'], kv: ['sglang:token_usage'] }],
  ['llamacpp', { prefix: 'llamacpp:', running: ['llamacpp:requests_processing'], waiting: ['llamacpp:requests_deferred'], kv: ['llamacpp:kv_cache_usage_ratio'] }],
  ['tgi', { prefix: 'tgi_', running: ['tgi_batch_current_size'], waiting: ['tgi_queue_size'], kv: [] }],
];

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
// A Prometheus sample value: a Go float, including NaN and ±Inf.
const SAMPLE_VALUE = /^(?:[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?Inf|NaN)$/;
// A small slack for float rounding above 1; anything further out is not a ratio at all.
const RATIO_SLACK = 1e-6;

type Sample = { value: number; labels?: Record<string, string> };

const clip = (s: string) => JSON.stringify(s.length > 60 ? `${s.slice(0, 60)}…` : s);

function parseValue(raw: string | undefined, metric: string): number {
  if (raw === undefined || !SAMPLE_VALUE.test(raw)) throw new EngineMetricsError(`not Prometheus text: ${clip(metric)} has value ${clip(String(raw))}`);
  return raw.endsWith('Inf') ? (raw.startsWith('-') ? -Infinity : Infinity) : Number(raw);
}

/** Every plain sample by metric name; histogram and summary parts are checked, never read. */
function samplesByName(text: string): Map<string, Sample[]> {
  // The parser silently skips a sample line without a name, which is how a JSON body looks to it.
  const nameless = text.split('\n').find((line) => line.trimStart().startsWith('{'));
  if (nameless !== undefined) throw new EngineMetricsError(`not Prometheus text: a line without a metric name: ${clip(nameless.trim())}`);
  let families;
  try {
    // The parser drops a last line that has no line feed; add it so a cut-off body is checked too.
    families = parsePrometheusTextFormat(text.endsWith('\n') ? text : `${text}\n`);
  } catch (err) {
    throw new EngineMetricsError(`not Prometheus text: ${(err as Error).message.slice(0, 120)}`);
  }
  const byName = new Map<string, Sample[]>();
  for (const family of families) {
    if (!METRIC_NAME.test(family.name)) throw new EngineMetricsError(`not Prometheus text: ${clip(family.name)} is not a metric name`);
    for (const m of family.metrics) {
      for (const part of [m.count, m.sum, ...Object.values(m.buckets ?? {}), ...Object.values(m.quantiles ?? {})]) {
        if (part !== undefined) parseValue(part, family.name);
      }
      if (m.value === undefined) continue;
      const list = byName.get(family.name) ?? [];
      list.push({ value: parseValue(m.value, family.name), labels: m.labels });
      byName.set(family.name, list);
    }
  }
  return byName;
}

/**
 * The samples of the first present name that belong to this instance: unlabelled ones, and those
 * whose `model_name` is one of its models (all of them when the instance lists none). Undefined
 * when the engine does not export the metric or none of its samples is for these models.
 */
function pick(byName: Map<string, Sample[]>, names: readonly string[], models: readonly string[]): number[] | undefined {
  for (const name of names) {
    const samples = byName.get(name);
    if (!samples) continue;
    const mine = samples.filter((s) => s.labels?.model_name === undefined || models.length === 0 || models.includes(s.labels.model_name));
    return mine.length ? mine.map((s) => s.value) : undefined;
  }
  return undefined;
}

/** Requests are summed over the engine's data-parallel ranks; a NaN, ±Inf or negative count is unknown. */
function count(values: number[] | undefined): number | null {
  if (!values || values.some((v) => !Number.isFinite(v) || v < 0)) return null;
  return values.reduce((a, b) => a + b, 0);
}

/** Each rank has its own KV cache, so the instance's usage is their mean, not their sum. */
function ratio(values: number[] | undefined): number | null {
  if (!values || values.some((v) => !Number.isFinite(v) || v < 0 || v > 1 + RATIO_SLACK)) return null;
  return Math.min(1, values.reduce((a, b) => a + b, 0) / values.length);
}

/**
 * Normalises an engine's /metrics page into running, waiting and KV-cache usage for an instance
 * serving `models`. Null for what the engine does not report (never an invented 0); throws
 * EngineMetricsError when the text is not Prometheus exposition format.
 */
export function parseEngineMetrics(text: string, models: readonly string[]): EngineMetrics {
  const byName = samplesByName(text);
  const names = [...byName.keys()];
  const found = ENGINES.find(([, e]) => names.some((n) => n.startsWith(e.prefix)));
  if (!found) return { engine: 'unknown', running: null, waiting: null, kv_cache_usage: null };
  const [engine, e] = found;
  return {
    engine,
    running: count(pick(byName, e.running, models)),
    waiting: count(pick(byName, e.waiting, models)),
    kv_cache_usage: ratio(pick(byName, e.kv, models)),
  };
}
