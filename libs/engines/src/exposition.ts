/**
 * Writers of each engine's /metrics page, in its own names, labels and number format, for the
 * simulator and the fake engines of the e2e suite. The parser is tested on captured fixtures,
 * never on these, so a slip here cannot hide a slip there.
 */

export interface EngineLoad {
  running: number | null;
  waiting: number | null;
  /** 0..1; null leaves the metric out, as an engine that does not export it. */
  kv_cache_usage: number | null;
}

export interface ExpositionInput extends EngineLoad {
  model: string;
  promptTokens?: number;
  generationTokens?: number;
  /** Seconds to first token of finished requests. */
  ttft?: Histogram;
}

/** A cumulative Prometheus histogram with fixed upper bounds. */
export class Histogram {
  private readonly counts: number[];
  private sum = 0;
  private total = 0;

  constructor(readonly bounds: readonly number[]) {
    this.counts = bounds.map(() => 0);
  }

  observe(v: number): void {
    this.bounds.forEach((b, i) => {
      if (v <= b) this.counts[i] += 1;
    });
    this.sum += v;
    this.total += 1;
  }

  lines(name: string, labels: Record<string, string>, num: (v: number) => string): string[] {
    const out = this.bounds.map((b, i) => `${name}_bucket${labelSet({ ...labels, le: num(b) })} ${num(this.counts[i])}`);
    out.push(`${name}_bucket${labelSet({ ...labels, le: '+Inf' })} ${num(this.total)}`);
    out.push(`${name}_count${labelSet(labels)} ${num(this.total)}`, `${name}_sum${labelSet(labels)} ${num(this.sum)}`);
    return out;
  }
}

/** vLLM's time-to-first-token buckets (vllm/v1/metrics/loggers.py). */
export const VLLM_TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560];

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');

/** prometheus_client sorts label names. */
function labelSet(labels: Record<string, string>): string {
  const keys = Object.keys(labels).sort();
  return keys.length ? `{${keys.map((k) => `${k}="${escapeLabel(labels[k])}"`).join(',')}}` : '';
}

/** Python's float repr as prometheus_client prints it: 3 → 3.0, 1e6 → 1e+06. */
function pyFloat(v: number): string {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  if (Number.isNaN(v)) return 'NaN';
  if (Math.abs(v) >= 1e16 || (v !== 0 && Math.abs(v) < 1e-4)) return v.toExponential().replace(/e([+-])(\d)$/, 'e$10$2');
  return Number.isInteger(v) ? v.toFixed(1) : String(v);
}

/** llama.cpp writes numbers with a C++ ostream: integers bare, at most 6 significant digits. */
const cppNumber = (v: number) => (Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(6))));

function family(out: string[], name: string, help: string, type: string, samples: string[]): void {
  out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples);
}

function vllm(m: ExpositionInput): string {
  const l = { engine: '0', model_name: m.model };
  const out: string[] = [];
  if (m.running !== null) family(out, 'vllm:num_requests_running', 'Number of requests in model execution batches.', 'gauge', [`vllm:num_requests_running${labelSet(l)} ${pyFloat(m.running)}`]);
  if (m.waiting !== null) family(out, 'vllm:num_requests_waiting', 'Number of requests waiting to be processed.', 'gauge', [`vllm:num_requests_waiting${labelSet(l)} ${pyFloat(m.waiting)}`]);
  if (m.kv_cache_usage !== null) family(out, 'vllm:kv_cache_usage_perc', 'KV-cache usage. 1 means 100 percent usage.', 'gauge', [`vllm:kv_cache_usage_perc${labelSet(l)} ${pyFloat(m.kv_cache_usage)}`]);
  family(out, 'vllm:prompt_tokens_total', 'Number of prefill tokens processed.', 'counter', [`vllm:prompt_tokens_total${labelSet(l)} ${pyFloat(m.promptTokens ?? 0)}`]);
  family(out, 'vllm:generation_tokens_total', 'Number of generation tokens processed.', 'counter', [`vllm:generation_tokens_total${labelSet(l)} ${pyFloat(m.generationTokens ?? 0)}`]);
  const ttft = m.ttft ?? new Histogram(VLLM_TTFT_BUCKETS);
  family(out, 'vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', 'histogram', ttft.lines('vllm:time_to_first_token_seconds', l, pyFloat));
  return `${out.join('\n')}\n`;
}

function sglang(m: ExpositionInput): string {
  const l = { engine_type: 'unified', model_name: m.model, moe_ep_rank: '0', pp_rank: '0', tp_rank: '0' };
  const t = { model_name: m.model };
  const out: string[] = [];
  family(out, 'sglang:prompt_tokens_total', 'Number of prefill tokens processed.', 'counter', [`sglang:prompt_tokens_total${labelSet(t)} ${pyFloat(m.promptTokens ?? 0)}`]);
  family(out, 'sglang:generation_tokens_total', 'Number of generation tokens processed.', 'counter', [`sglang:generation_tokens_total${labelSet(t)} ${pyFloat(m.generationTokens ?? 0)}`]);
  const ttft = m.ttft ?? new Histogram(VLLM_TTFT_BUCKETS);
  family(out, 'sglang:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', 'histogram', ttft.lines('sglang:time_to_first_token_seconds', t, pyFloat));
  if (m.running !== null) family(out, 'sglang:num_running_reqs', 'The number of running requests.', 'gauge', [`sglang:num_running_reqs${labelSet(l)} ${pyFloat(m.running)}`]);
  if (m.kv_cache_usage !== null) family(out, 'sglang:token_usage', 'The token usage.', 'gauge', [`sglang:token_usage${labelSet(l)} ${pyFloat(m.kv_cache_usage)}`]);
  if (m.waiting !== null) family(out, 'sglang:num_queue_reqs', 'The number of requests in the waiting queue.', 'gauge', [`sglang:num_queue_reqs${labelSet(l)} ${pyFloat(m.waiting)}`]);
  return `${out.join('\n')}\n`;
}

/** llama.cpp server: unlabelled; kv_cache_usage_ratio exists only in older builds, so it is written only when set. */
function llamacpp(m: ExpositionInput): string {
  const out: string[] = [];
  const one = (name: string, help: string, type: string, v: number) => family(out, `llamacpp:${name}`, help, type, [`llamacpp:${name} ${cppNumber(v)}`]);
  one('prompt_tokens_total', 'Number of prompt tokens processed.', 'counter', m.promptTokens ?? 0);
  one('tokens_predicted_total', 'Number of generation tokens processed.', 'counter', m.generationTokens ?? 0);
  if (m.kv_cache_usage !== null) one('kv_cache_usage_ratio', 'KV-cache usage. 1 means 100 percent usage.', 'gauge', m.kv_cache_usage);
  if (m.running !== null) one('requests_processing', 'Number of requests processing.', 'gauge', m.running);
  if (m.waiting !== null) one('requests_deferred', 'Number of requests deferred.', 'gauge', m.waiting);
  return `${out.join('\n')}\n`;
}

export type ExposedEngine = 'vllm' | 'sglang' | 'llamacpp';

export function renderEngineMetrics(engine: ExposedEngine, input: ExpositionInput): string {
  return engine === 'vllm' ? vllm(input) : engine === 'sglang' ? sglang(input) : llamacpp(input);
}
