import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { configFileFrom, declaredInstances, parseSettings, readConfigFile } from './config-file';

const dir = mkdtempSync(path.join(os.tmpdir(), 'sy-config-'));
const file = (text: string) => {
  const p = path.join(dir, 'switchyard.yaml');
  writeFileSync(p, text);
  return p;
};

const schema = z
  .object({
    PORT: z.coerce.number().int().min(1).max(65535).default(8081),
    PROBE_INTERVAL_S: z.coerce.number().min(0.2).max(3600).default(5),
    ADMIN_TOKEN: z.string().min(1).optional(),
  })
  .superRefine(() => undefined);

describe('config file', () => {
  it('reads settings of the named sections, env over file, defaults for the rest', () => {
    const cfg = readConfigFile(file('control_plane:\n  port: 9000\n  probe_interval_s: 0.5\nproxy:\n  port: 1\n'));
    expect(parseSettings(schema, {}, cfg, ['control_plane'])).toEqual({ PORT: 9000, PROBE_INTERVAL_S: 0.5 });
    expect(parseSettings(schema, { PORT: '7000' }, cfg, ['control_plane'])).toEqual({ PORT: 7000, PROBE_INTERVAL_S: 0.5 });
  });

  it('applies defaults, and names the variable that is wrong', () => {
    expect(parseSettings(schema, {})).toEqual({ PORT: 8081, PROBE_INTERVAL_S: 5 });
    expect(() => parseSettings(schema, { PORT: 'x' })).toThrow(/^invalid configuration: PORT: /);
  });

  it('treats an empty variable as unset (compose and Kubernetes pass VAR="" for not given)', () => {
    expect(parseSettings(schema, { ADMIN_TOKEN: '', PORT: '' }, undefined)).toEqual({ PORT: 8081, PROBE_INTERVAL_S: 5 });
  });

  it('names file, line and key of a bad value', () => {
    const cfg = readConfigFile(file('# comment\ncontrol_plane:\n  port: 9000\n  probe_interval_s: 0.01\n'));
    expect(() => parseSettings(schema, {}, cfg, ['control_plane'])).toThrow(/^invalid configuration: switchyard\.yaml:4: control_plane\.probe_interval_s: .*0\.2/);
  });

  it('names the variable when the bad value came from the environment', () => {
    const cfg = readConfigFile(file('control_plane:\n  port: 9000\n'));
    expect(() => parseSettings(schema, { PORT: 'x' }, cfg, ['control_plane'])).toThrow(/^invalid configuration: PORT: /);
  });

  it('refuses an unknown key, with its line', () => {
    const cfg = readConfigFile(file('control_plane:\n  port: 9000\n  prob_interval: 3\n'));
    expect(() => parseSettings(schema, {}, cfg, ['control_plane'])).toThrow(/^invalid configuration: switchyard\.yaml:3: control_plane\.prob_interval: unknown setting/);
  });

  it('refuses an unknown section, a YAML error and a nested value, each with its line', () => {
    expect(() => readConfigFile(file('control_plane: {}\nproxies:\n  port: 1\n'))).toThrow(/switchyard\.yaml:2: proxies: unknown section/);
    expect(() => readConfigFile(file('control_plane:\n  port: [1\n'))).toThrow(/switchyard\.yaml:\d+: not valid YAML/);
    expect(() => readConfigFile(file('proxy:\n  port:\n    nested: 1\n'))).toThrow(/switchyard\.yaml:2: proxy\.port: must be a single value/);
    expect(() => readConfigFile(path.join(dir, 'missing.yaml'))).toThrow(/missing\.yaml: cannot read \(ENOENT\)/);
  });

  it('reads declared instances and checks them with their line', () => {
    const cfg = readConfigFile(
      file('instances:\n  - url: http://10.0.0.1:8000\n    models: [llama]\n    weight: 2\n  - url: http://10.0.0.2:8000\n    max_inflight: 8\n'),
    );
    expect(declaredInstances({ INSTANCES: 'http://10.0.0.3:8000' }, cfg)).toEqual([
      { url: 'http://10.0.0.1:8000', models: ['llama'], weight: 2 },
      { url: 'http://10.0.0.2:8000', max_inflight: 8 },
      { url: 'http://10.0.0.3:8000' },
    ]);
    expect(() => readConfigFile(file('instances:\n  - url: http://a:1\n    wieght: 2\n'))).toThrow(/switchyard\.yaml:3: instances\[0\]\.wieght: unknown key/);
    expect(() => readConfigFile(file('instances:\n  - url: http://a:1\n  - url: ftp://b\n'))).toThrow(/switchyard\.yaml:3: instances\[1\]\.url: scheme must be http or https/);
    expect(() => readConfigFile(file('instances:\n  - url: http://a:1\n    weight: "heavy"\n'))).toThrow(/switchyard\.yaml:3: instances\[0\]\.weight: /);
    expect(() => declaredInstances({ INSTANCES: 'http://ok:1,not a url' })).toThrow(/^invalid configuration: INSTANCES: not a url: /);
  });

  it('reads the file given on the command line before SWITCHYARD_CONFIG, and none when neither names one', () => {
    const given = file('proxy:\n  port: 1234\n');
    expect(configFileFrom(given, { SWITCHYARD_CONFIG: path.join(dir, 'other.yaml') })?.path).toBe(given);
    expect(configFileFrom(undefined, { SWITCHYARD_CONFIG: given })?.path).toBe(given);
    expect(configFileFrom(undefined, { SWITCHYARD_CONFIG: '' })).toBeUndefined();
    expect(() => configFileFrom(undefined, { SWITCHYARD_CONFIG: path.join(dir, 'nope.yaml') })).toThrow(/nope\.yaml: cannot read \(ENOENT\)/);
  });
});

describe('declared instance URLs', () => {
  it('refuses a query, a fragment or credentials, as registration does', () => {
    // The same messages as registration: the rule is contracts' instanceUrlSchema.
    for (const url of ['http://a:1/?x=1', 'http://a:1#f', 'http://a:1?']) {
      expect(() => declaredInstances({ INSTANCES: url })).toThrow(/^invalid configuration: INSTANCES: .*must not have a query or a fragment/);
    }
    expect(() => declaredInstances({ INSTANCES: 'http://u:p@a:1' })).toThrow(/^invalid configuration: INSTANCES: .*must not carry credentials/);
    expect(declaredInstances({ INSTANCES: 'http://a:1/v1,https://b' }).map((d) => d.url)).toEqual(['http://a:1/v1', 'https://b']);
  });
});

describe('config file keys', () => {
  it('reads the keys list: the secret or its sha256, models and limits', () => {
    const sha = 'a'.repeat(64);
    const cfg = readConfigFile(file(`keys:\n  - name: team-a\n    key: sk-team-a-0123456789\n    models: [llama]\n    rpm: 10\n  - name: team-b\n    key_sha256: ${sha}\n    tpm: 5000\n`));
    expect(cfg.keys).toEqual([
      { name: 'team-a', key: 'sk-team-a-0123456789', models: ['llama'], rpm: 10 },
      { name: 'team-b', key_sha256: sha, tpm: 5000 },
    ]);
  });

  it.each([
    ['keys:\n  - name: a\n    rpm: 10\n', /switchyard\.yaml:2: keys\[0\]\.key: give exactly one of key and key_sha256/],
    ['keys:\n  - name: a\n    key: sk-long-enough-0001\n    rpm: 0\n', /switchyard\.yaml:4: keys\[0\]\.rpm: /],
    ['keys:\n  - name: a\n    key: short\n', /switchyard\.yaml:3: keys\[0\]\.key: must be 16-512/],
    ['keys:\n  - name: a\n    key: sk-long-enough-0001\n    limit: 3\n', /switchyard\.yaml:4: keys\[0\]\.limit: unknown key/],
    ['keys:\n  - name: a\n    key: sk-long-enough-0001\n  - name: a\n    key: sk-long-enough-0002\n', /switchyard\.yaml:4: keys\[1\]\.name: 'a' is used twice/],
    ['keys: 3\n', /switchyard\.yaml:1: keys: must be a list/],
  ])('stops at a bad entry naming file, line and field, never the secret: %j', (text, message) => {
    expect(() => readConfigFile(file(text))).toThrow(message);
    try {
      readConfigFile(file(text));
    } catch (err) {
      expect((err as Error).message).not.toContain('sk-long-enough');
    }
  });
});
