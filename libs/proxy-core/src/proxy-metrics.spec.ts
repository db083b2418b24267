import { ProxyMetrics, statusClass } from './proxy-metrics';

const metrics = () =>
  new ProxyMetrics(
    { inflightHttp: () => 0, degraded: () => false, controlPlaneReachable: () => true, draining: () => false, registrySize: () => 0, instanceInflight: () => new Map(), queued: () => ({}) },
    { proxyId: 'p', worker: 1 },
  );

const sample = (text: string, series: string) => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.split(' ').pop());
};

describe('ProxyMetrics', () => {
  it('labels a model the registry does not know as other, so clients cannot add series', async () => {
    const m = metrics();
    for (const name of ['a', 'b', 'c']) m.series(name, false).instance('none').requests('4xx').inc();
    m.series('served', true).instance('i1').prompt.inc(5);
    const text = await m.registry.metrics();
    expect(sample(text, 'switchyard_proxy_model_requests_total{model="other",instance_id="none",status_class="4xx"}')).toBe(3);
    expect(sample(text, 'switchyard_proxy_prompt_tokens_total{model="served",instance_id="i1"}')).toBe(5);
    expect(text).not.toContain('model="a"');
    expect(m.series('x', false)).toBe(m.series('y', false));
  });

  it('renders bound histograms as Prometheus histograms (cumulative buckets, sum, count)', async () => {
    const m = metrics();
    const s = m.series('m', true);
    s.ttft.observe(0.02);
    s.ttft.observe(0.4);
    s.ttft.observe(1000);
    const text = await m.registry.metrics();
    expect(sample(text, 'switchyard_proxy_time_to_first_token_seconds_bucket{le="0.025",model="m"}')).toBe(1);
    expect(sample(text, 'switchyard_proxy_time_to_first_token_seconds_bucket{le="0.5",model="m"}')).toBe(2);
    expect(sample(text, 'switchyard_proxy_time_to_first_token_seconds_bucket{le="+Inf",model="m"}')).toBe(3);
    expect(sample(text, 'switchyard_proxy_time_to_first_token_seconds_count{model="m"}')).toBe(3);
    expect(sample(text, 'switchyard_proxy_time_to_first_token_seconds_sum{model="m"}')).toBeCloseTo(1000.42);
    expect(text).toContain('# TYPE switchyard_proxy_time_to_first_token_seconds histogram');
  });

  it('counts HTTP responses under the new name and the deprecated one', async () => {
    const m = metrics();
    m.countRequest('/v1/models', 'GET', 200);
    const text = await m.registry.metrics();
    expect(sample(text, 'switchyard_proxy_http_requests_total{route="/v1/models",method="GET",status="200"}')).toBe(1);
    expect(sample(text, 'switchyard_proxy_requests_total{route="/v1/models",method="GET",status="200"}')).toBe(1);
    expect(text).toMatch(/# HELP switchyard_proxy_requests_total Deprecated/);
  });

  it('classes statuses, the client leaving first as client_gone', () => {
    expect([200, 302, 404, 503, 499].map(statusClass)).toEqual(['2xx', '3xx', '4xx', '5xx', 'client_gone']);
  });
});
