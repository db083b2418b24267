import type { InstanceLoadsResponse, InstanceLoadView } from '@switchyard/contracts';
import { emptyInstanceStats, METRIC_SOURCE, NULL_SEMANTICS, TTFT_BUCKETS_MS } from '@switchyard/contracts';
import { formatAge, formatInstances, formatSummary } from './format';

const NOW = '2030-01-01T00:01:00.000Z';

function instance(over: Partial<InstanceLoadView>): InstanceLoadView {
  return {
    instance_id: 'i',
    url: 'http://127.0.0.1:1',
    models: ['m'],
    alive: true,
    is_alive: true,
    weight: 1,
    max_inflight: null,
    inflight: 0,
    inflight_by_proxy: {},
    qps_1m: null,
    gpu_util: null,
    last_seen_at: NOW,
    queued_by_proxy: {},
    engine: { engine: 'unknown', running: null, waiting: null, kv_cache_usage: null, scraped_at: null, scrape_error: null },
    stats: emptyInstanceStats(),
    ...over,
  };
}

function view(instances: InstanceLoadView[]): InstanceLoadsResponse {
  return { generated_at: NOW, metric_source: METRIC_SOURCE, null_semantics: NULL_SEMANTICS, ttft_buckets_ms: TTFT_BUCKETS_MS, instances, proxies: [] };
}

const rows = (text: string) => text.trimEnd().split('\n').map((line) => line.trim().split(/\s{2,}/));

describe('formatInstances', () => {
  it('shows unknown as - and a measured zero as 0', () => {
    const [header, unknown, zero] = rows(
      formatInstances(view([instance({ instance_id: 'b', qps_1m: 0, gpu_util: 0 }), instance({ instance_id: 'a' })]), false),
    );
    expect(header).toEqual(['ID', 'MODELS', 'ALIVE', 'INFLIGHT', 'QPS_1M', 'GPU_UTIL', 'LAST SEEN']);
    expect(unknown).toEqual(['a', 'm', 'yes', '0', '-', '-', '0s ago']);
    expect(zero).toEqual(['b', 'm', 'yes', '0', '0', '0%', '0s ago']);
  });

  it('adds limits and per-proxy counts with verbose', () => {
    const text = formatInstances(
      view([instance({ instance_id: 'a', models: ['x', 'y'], alive: false, is_alive: false, max_inflight: 4, inflight: 3, inflight_by_proxy: { p2: 1, p1: 2 }, queued_by_proxy: { p1: 2 }, qps_1m: 1.234, gpu_util: 55.5, last_seen_at: '2030-01-01T00:00:00.000Z', engine: { engine: 'vllm', running: 3, waiting: 0, kv_cache_usage: 0.423, scraped_at: NOW, scrape_error: null } })]),
      true,
    );
    expect(rows(text)).toEqual([
      ['ID', 'MODELS', 'ALIVE', 'INFLIGHT', 'MAX', 'WEIGHT', 'BY PROXY', 'QUEUED', 'ENGINE', 'RUNNING', 'WAITING', 'KV', 'QPS_1M', 'GPU_UTIL', 'LAST SEEN', 'URL'],
      ['a', 'x,y', 'expired', '3', '4', '1', 'p1=2,p2=1', '2', 'vllm', '3', '0', '42.3%', '1.23', '55.5%', '60s ago', 'http://127.0.0.1:1'],
    ]);
  });

  it('shows unknown engine signals as -, and a failed scrape with !', () => {
    const text = formatInstances(view([instance({ instance_id: 'a', engine: { engine: 'sglang', running: null, waiting: 2, kv_cache_usage: null, scraped_at: NOW, scrape_error: 'GET /metrics: status 500' } })]), true);
    expect(rows(text)[1].slice(8, 12)).toEqual(['sglang!', '-', '2', '-']);
  });

  it('says so when there is nothing to show', () => {
    expect(formatInstances(view([]), false)).toBe('no instances\n');
  });
});

describe('formatSummary', () => {
  it('totals what the rows show', () => {
    expect(formatSummary(view([instance({ inflight: 2 }), instance({ inflight: 3, alive: false, is_alive: false })]))).toBe('instances 1 alive, 1 expired  proxies 0 alive  in flight 5  queued 0');
  });
});

describe('formatAge', () => {
  it('counts from the control plane clock', () => {
    expect(formatAge('2030-01-01T00:00:58.500Z', NOW)).toBe('1s ago');
    expect(formatAge('2029-12-31T22:00:00.000Z', NOW)).toBe('2h ago');
    expect(formatAge('2030-01-01T00:02:00.000Z', NOW)).toBe('0s ago');
  });
});
