import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EngineMetricsError, parseEngineMetrics } from './parse-engine-metrics';

const fixture = (name: string) => readFileSync(join(__dirname, 'fixtures', name), 'utf8');
const LLAMA = 'meta-llama/Llama-3.1-8B-Instruct';

describe('parseEngineMetrics on captured-format pages', () => {
  it('vLLM (V1 engine): running, waiting and kv_cache_usage_perc for the served model', () => {
    expect(parseEngineMetrics(fixture('vllm.prom'), [LLAMA])).toEqual({ engine: 'vllm', running: 7, waiting: 3, kv_cache_usage: 0.4183673469387755 });
  });

  it('vLLM before 0.9: the older gpu_cache_usage_perc name', () => {
    expect(parseEngineMetrics(fixture('vllm-v0.prom'), ['/models/llama-2-7b'])).toEqual({ engine: 'vllm', running: 12, waiting: 0, kv_cache_usage: 0.9712 });
  });

  it('vLLM with two data-parallel engines: requests summed, KV usage averaged', () => {
    expect(parseEngineMetrics(fixture('vllm-dp.prom'), ['Qwen/Qwen3-30B-A3B'])).toEqual({ engine: 'vllm', running: 9, waiting: 2, kv_cache_usage: 0.6 });
  });

  it('SGLang: num_running_reqs, num_queue_reqs, token_usage', () => {
    expect(parseEngineMetrics(fixture('sglang.prom'), [LLAMA])).toEqual({ engine: 'sglang', running: 5, waiting: 11, kv_cache_usage: 0.62 });
  });

  it('llama.cpp server, current build: no KV-cache gauge, so null rather than 0', () => {
    expect(parseEngineMetrics(fixture('llamacpp.prom'), ['qwen2.5-7b'])).toEqual({ engine: 'llamacpp', running: 2, waiting: 1, kv_cache_usage: null });
  });

  it('llama.cpp server, older build with kv_cache_usage_ratio', () => {
    expect(parseEngineMetrics(fixture('llamacpp-kv.prom'), [])).toEqual({ engine: 'llamacpp', running: 1, waiting: 0, kv_cache_usage: 0.25 });
  });

  it('TGI: batch size is running, queue size is waiting, no KV figure', () => {
    expect(parseEngineMetrics(fixture('tgi.prom'), ['bigscience/bloom'])).toEqual({ engine: 'tgi', running: 9, waiting: 4, kv_cache_usage: null });
  });
});

describe('parseEngineMetrics: which samples count', () => {
  const two = [
    '# TYPE vllm:num_requests_running gauge',
    'vllm:num_requests_running{engine="0",model_name="a"} 2.0',
    'vllm:num_requests_running{engine="0",model_name="b"} 5.0',
    '# TYPE vllm:num_requests_waiting gauge',
    'vllm:num_requests_waiting{engine="0",model_name="a"} 1.0',
    'vllm:num_requests_waiting{engine="0",model_name="b"} 4.0',
  ].join('\n');

  it('takes only the samples of the instance’s models, summed', () => {
    expect(parseEngineMetrics(two, ['b'])).toMatchObject({ running: 5, waiting: 4 });
    expect(parseEngineMetrics(two, ['a', 'b'])).toMatchObject({ running: 7, waiting: 5 });
  });

  it('gives null, not 0, when no sample is for the instance’s models', () => {
    expect(parseEngineMetrics(two, ['c'])).toEqual({ engine: 'vllm', running: null, waiting: null, kv_cache_usage: null });
  });

  it('turns NaN and ±Inf into null and leaves the other fields alone', () => {
    const page = (v: string) => `vllm:num_requests_running{model_name="m"} ${v}\nvllm:num_requests_waiting{model_name="m"} 3\nvllm:kv_cache_usage_perc{model_name="m"} ${v}\n`;
    for (const v of ['NaN', '+Inf', '-Inf']) {
      expect(parseEngineMetrics(page(v), ['m'])).toEqual({ engine: 'vllm', running: null, waiting: 3, kv_cache_usage: null });
    }
  });

  it('does not take a KV figure outside 0..1 for a ratio', () => {
    expect(parseEngineMetrics('sglang:token_usage{model_name="m"} 62\n', ['m']).kv_cache_usage).toBeNull();
    expect(parseEngineMetrics('sglang:token_usage{model_name="m"} 1.0000000001\n', ['m']).kv_cache_usage).toBe(1);
  });

  it('calls a page of other metrics unknown, everything null', () => {
    expect(parseEngineMetrics('# TYPE process_open_fds gauge\nprocess_open_fds 12\n', ['m'])).toEqual({ engine: 'unknown', running: null, waiting: null, kv_cache_usage: null });
    expect(parseEngineMetrics('', ['m'])).toEqual({ engine: 'unknown', running: null, waiting: null, kv_cache_usage: null });
  });
});

describe('parseEngineMetrics on text that is not Prometheus', () => {
  it.each([
    ['an HTML error page', '<!DOCTYPE html>\n<html><body><h1>502 Bad Gateway</h1></body></html>\n'],
    ['a JSON body', '{"status":"ok"}'],
    ['prose', 'service temporarily unavailable'],
    ['a sample cut in half', 'vllm:num_requests_running{model_name="m"} 3\nvllm:num_requests_waiting{model_na'],
    ['a non-numeric value', 'vllm:num_requests_running{model_name="m"} three\n'],
    ['a broken histogram bucket', '# TYPE x histogram\nx_bucket{le="1"} lots\nx_count 1\nx_sum 1\n'],
  ])('throws a clear EngineMetricsError for %s', (_what, text) => {
    expect(() => parseEngineMetrics(text, ['m'])).toThrow(EngineMetricsError);
    expect(() => parseEngineMetrics(text, ['m'])).toThrow(/^not Prometheus text: /);
  });
});
