import { availableParallelism } from 'node:os';
import { loadProxyConfig, proxyConfigWarnings } from './proxy-config';

describe('loadProxyConfig', () => {
  it('defaults to least_load on port 8080 with a 16 MiB body limit', () => {
    expect(loadProxyConfig({})).toMatchObject({ PORT: 8080, ROUTING_STRATEGY: 'least_load', MAX_BODY_BYTES: 16 * 1024 * 1024 });
  });
  it('maps strategy aliases to canonical names', () => {
    expect(loadProxyConfig({ ROUTING_STRATEGY: 'rr' }).ROUTING_STRATEGY).toBe('round_robin');
    expect(loadProxyConfig({ ROUTING_STRATEGY: 'p2c' }).ROUTING_STRATEGY).toBe('power_of_two');
    expect(loadProxyConfig({ ROUTING_STRATEGY: 'least-load' }).ROUTING_STRATEGY).toBe('least_load');
  });
  it('names the variable and lists valid strategies on a bad value', () => {
    expect(() => loadProxyConfig({ ROUTING_STRATEGY: 'fastest' })).toThrow(/ROUTING_STRATEGY: unknown strategy; valid names: least_load/);
    expect(() => loadProxyConfig({ MAX_BODY_BYTES: 'lots' })).toThrow(/MAX_BODY_BYTES/);
  });
});

describe('edge configuration', () => {
  it('keeps client credentials and CORS off by default; reads origins as a list and refuses one with a path, naming the variable', () => {
    expect(loadProxyConfig({})).toMatchObject({ FORWARD_CLIENT_AUTH: false, CORS_ORIGINS: [] });
    expect(loadProxyConfig({ FORWARD_CLIENT_AUTH: 'true', CORS_ORIGINS: 'https://a.example, http://localhost:3000' })).toMatchObject({ FORWARD_CLIENT_AUTH: true, CORS_ORIGINS: ['https://a.example', 'http://localhost:3000'] });
    expect(() => loadProxyConfig({ CORS_ORIGINS: 'https://a.example/app' })).toThrow(/CORS_ORIGINS: a comma-separated list of origins/);
    expect(() => loadProxyConfig({ FORWARD_CLIENT_AUTH: 'yes' })).toThrow(/FORWARD_CLIENT_AUTH: must be true or false/);
  });
});

describe('drain and queue configuration', () => {
  it('defaults to a 30 s drain after a 5 s settle window and a 1024-deep queue', () => {
    expect(loadProxyConfig({})).toMatchObject({ DRAIN_TIMEOUT_S: 30, DRAIN_SETTLE_S: 5, QUEUE_MAX: 1024, QUEUE_TIMEOUT_S: 30 });
  });
  it('rejects a drain timeout that looks like milliseconds, or zero', () => {
    expect(() => loadProxyConfig({ DRAIN_TIMEOUT_S: '30000' })).toThrow(/DRAIN_TIMEOUT_S: must be at most 3600 seconds/);
    expect(() => loadProxyConfig({ DRAIN_TIMEOUT_S: '0' })).toThrow(/DRAIN_TIMEOUT_S/);
  });
  it('needs the settle window shorter than the drain timeout', () => {
    expect(() => loadProxyConfig({ DRAIN_TIMEOUT_S: '5', DRAIN_SETTLE_S: '5' })).toThrow(/DRAIN_SETTLE_S: must be less than DRAIN_TIMEOUT_S/);
  });
  it('warns when drain and settle do not fit in the termination grace period', () => {
    expect(proxyConfigWarnings(loadProxyConfig({ TERMINATION_GRACE_S: '30' }))).toEqual([expect.stringMatching(/TERMINATION_GRACE_S \(30\)/)]);
    expect(proxyConfigWarnings(loadProxyConfig({ TERMINATION_GRACE_S: '60' }))).toEqual([]);
  });
});

describe('workers and request body timeout', () => {
  it('defaults to one worker and a 30 s request body timeout; auto is one worker per CPU', () => {
    expect(loadProxyConfig({})).toMatchObject({ WORKERS: 1, REQUEST_BODY_TIMEOUT_S: 30 });
    expect(loadProxyConfig({ WORKERS: 'auto' }).WORKERS).toBe(availableParallelism());
    expect(loadProxyConfig({ WORKERS: '4' }).WORKERS).toBe(4);
  });
  it('names WORKERS on a bad value', () => {
    for (const bad of ['0', '-1', 'two', '1.5']) expect(() => loadProxyConfig({ WORKERS: bad })).toThrow(/WORKERS: a whole number from 1 to 999, or 'auto'/);
  });
});
