import path from 'node:path';
import { declaredInstances, readConfigFile } from '@switchyard/config';
import { loadProxyConfig } from '@switchyard/proxy-core';
import { loadControlPlaneConfig } from './config';

describe('LEASE_SWEEP_S', () => {
  it('defaults to one second and accepts fractions', () => {
    expect(loadControlPlaneConfig({}).LEASE_SWEEP_S).toBe(1);
    expect(loadControlPlaneConfig({ LEASE_SWEEP_S: '0.25' }).LEASE_SWEEP_S).toBe(0.25);
  });
  it('stops on a value that is not a sane interval, naming it', () => {
    for (const bad of ['0', '-1', 'often', '0.01', '7200']) {
      expect(() => loadControlPlaneConfig({ LEASE_SWEEP_S: bad })).toThrow(/^invalid configuration: LEASE_SWEEP_S: /);
    }
  });
});

describe('probe settings', () => {
  it('default to a 5 s interval, a 2 s timeout and a 0.97 KV-cache guard', () => {
    const c = loadControlPlaneConfig({});
    expect([c.PROBE_INTERVAL_S, c.PROBE_TIMEOUT_S, c.KV_CACHE_GUARD]).toEqual([5, 2, 0.97]);
    expect(loadControlPlaneConfig({ PROBE_INTERVAL_S: '0.2' }).PROBE_INTERVAL_S).toBe(0.2);
  });
  it('stop on values out of range, naming the variable', () => {
    expect(() => loadControlPlaneConfig({ PROBE_INTERVAL_S: '0.1' })).toThrow(/^invalid configuration: PROBE_INTERVAL_S: /);
    expect(() => loadControlPlaneConfig({ PROBE_INTERVAL_S: '3601' })).toThrow(/^invalid configuration: PROBE_INTERVAL_S: /);
    expect(() => loadControlPlaneConfig({ KV_CACHE_GUARD: '1.5' })).toThrow(/^invalid configuration: KV_CACHE_GUARD: /);
  });
});

describe('examples/switchyard.yaml', () => {
  it('is a valid config file for the control plane and the proxy, with its declared instances', () => {
    const file = readConfigFile(path.join(__dirname, '../../../examples/switchyard.yaml'));
    expect(loadControlPlaneConfig({}, file)).toMatchObject({ PROBE_INTERVAL_S: 5, KV_CACHE_GUARD: 0.97 });
    expect(loadProxyConfig({}, file)).toMatchObject({ ROUTING_STRATEGY: 'least_load', MAX_RETRIES: 2 });
    expect(declaredInstances({}, file).map((i) => i.id)).toEqual(['vllm-0', 'sglang-0', 'llamacpp-0']);
  });
});
