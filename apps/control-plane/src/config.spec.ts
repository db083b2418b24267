import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { declaredInstances, readConfigFile } from '@switchyard/config';
import { loadProxyConfig } from '@switchyard/proxy-core';
import { adminTokens, loadControlPlaneConfig } from './config';

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

describe('closed by default', () => {
  it('refuses a non-loopback HOST without a token, naming ADMIN_TOKEN', () => {
    for (const HOST of ['0.0.0.0', '::', '10.0.0.5', 'cp.internal']) {
      expect(() => loadControlPlaneConfig({ HOST })).toThrow(/^invalid configuration: ADMIN_TOKEN: required when HOST \(.+\) is not a loopback address.*ALLOW_OPEN_ADMIN=true/);
    }
  });
  it('stays open on loopback, with a token, or with ALLOW_OPEN_ADMIN=true', () => {
    for (const HOST of ['127.0.0.1', '127.1.2.3', 'localhost', '::1']) expect(loadControlPlaneConfig({ HOST }).HOST).toBe(HOST);
    expect(loadControlPlaneConfig({ HOST: '0.0.0.0', ADMIN_TOKEN: 't' }).HOST).toBe('0.0.0.0');
    expect(loadControlPlaneConfig({ HOST: '0.0.0.0', ADMIN_TOKENS: 'ops:admin:0123456789abcdef' }).HOST).toBe('0.0.0.0');
    expect(loadControlPlaneConfig({ HOST: '0.0.0.0', ALLOW_OPEN_ADMIN: 'true' }).ALLOW_OPEN_ADMIN).toBe(true);
    expect(() => loadControlPlaneConfig({ HOST: '0.0.0.0', ALLOW_OPEN_ADMIN: 'yes' })).toThrow(/^invalid configuration: ALLOW_OPEN_ADMIN: /);
  });
});

describe('ADMIN_TOKENS', () => {
  it('parses name:role:token entries; ADMIN_TOKEN stays an admin token beside them', () => {
    const c = loadControlPlaneConfig({ ADMIN_TOKEN: 'first', ADMIN_TOKENS: 'grafana:read:0123456789abcdef, ops:admin:a:b:c-0123456789abcdef' });
    expect(adminTokens(c)).toEqual([
      { name: 'admin_token', role: 'admin', token: 'first' },
      { name: 'grafana', role: 'read', token: '0123456789abcdef' },
      { name: 'ops', role: 'admin', token: 'a:b:c-0123456789abcdef' },
    ]);
  });
  it('names the bad entry and never prints a token', () => {
    const cases: [string, RegExp][] = [
      ['grafana:write:0123456789abcdef', /entry 1 \(grafana\): role must be read or admin/],
      ['ok:read:0123456789abcdef,bad name:read:0123456789abcdef', /entry 2: name must be/],
      ['short:admin:tiny-secret', /entry 1 \(short\): token must be 16-512/],
      ['a:read:0123456789abcdef,a:admin:fedcba9876543210', /entry 2 \(a\): name used twice/],
      ['a:read:0123456789abcdef,b:admin:0123456789abcdef', /entry 2 \(b\): token used twice/],
    ];
    for (const [value, message] of cases) {
      let text = '';
      try {
        loadControlPlaneConfig({ ADMIN_TOKENS: value });
      } catch (e) {
        text = (e as Error).message;
      }
      expect(text).toMatch(/^invalid configuration: ADMIN_TOKENS: /);
      expect(text).toMatch(message);
      expect(text).not.toMatch(/0123456789abcdef|tiny-secret|fedcba/);
    }
  });
  it('is read from the config file and a bad entry names the file and line', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sy-cp-'));
    const file = path.join(dir, 'sy.yaml');
    writeFileSync(file, 'control_plane:\n  host: 0.0.0.0\n  admin_tokens: "grafana:read:0123456789abcdef,ops:admin:fedcba9876543210"\n');
    expect(adminTokens(loadControlPlaneConfig({}, readConfigFile(file))).map((t) => `${t.name}:${t.role}`)).toEqual(['grafana:read', 'ops:admin']);
    writeFileSync(file, 'control_plane:\n  host: 0.0.0.0\n  admin_tokens: "grafana:reader:0123456789abcdef"\n');
    expect(() => loadControlPlaneConfig({}, readConfigFile(file))).toThrow(/^invalid configuration: sy\.yaml:3: control_plane\.admin_tokens: entry 1 \(grafana\): role must be read or admin/);
    rmSync(dir, { recursive: true, force: true });
  });
});
