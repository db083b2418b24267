import { loadProxyConfig } from './proxy-config';

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
