import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Histogram, renderEngineMetrics, VLLM_TTFT_BUCKETS, type ExposedEngine } from './exposition';
import { parseEngineMetrics } from './parse-engine-metrics';

const helpLines = (text: string) => new Set(text.split('\n').filter((l) => l.startsWith('# HELP')));

describe('renderEngineMetrics', () => {
  it.each<[ExposedEngine, string[]]>([
    ['vllm', ['vllm.prom']],
    ['sglang', ['sglang.prom']],
    ['llamacpp', ['llamacpp.prom', 'llamacpp-kv.prom']],
  ])('writes %s pages that read back to the values given, with the HELP lines of the captured pages', (engine, captured) => {
    const ttft = new Histogram(VLLM_TTFT_BUCKETS);
    ttft.observe(0.03);
    const text = renderEngineMetrics(engine, { model: 'org/m "x"', running: 3, waiting: 2, kv_cache_usage: 0.25, promptTokens: 10, generationTokens: 20, ttft });
    expect(parseEngineMetrics(text, ['org/m "x"'])).toEqual({ engine, running: 3, waiting: 2, kv_cache_usage: 0.25 });
    const known = new Set(captured.flatMap((f) => [...helpLines(readFileSync(join(__dirname, 'fixtures', f), 'utf8'))]));
    expect([...helpLines(text)].filter((line) => !known.has(line))).toEqual([]);
  });

  it('leaves out what is null, which reads back as null', () => {
    const text = renderEngineMetrics('llamacpp', { model: 'm', running: 1, waiting: 0, kv_cache_usage: null });
    expect(text).not.toContain('kv_cache');
    expect(parseEngineMetrics(text, ['m'])).toEqual({ engine: 'llamacpp', running: 1, waiting: 0, kv_cache_usage: null });
  });

  it('keeps histogram buckets cumulative', () => {
    const h = new Histogram([0.1, 1]);
    [0.05, 0.5, 5].forEach((v) => h.observe(v));
    expect(h.lines('x', {}, String)).toEqual(['x_bucket{le="0.1"} 1', 'x_bucket{le="1"} 2', 'x_bucket{le="+Inf"} 3', 'x_count 3', 'x_sum 5.55']);
  });
});
