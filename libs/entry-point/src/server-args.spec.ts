import { readFileSync } from 'node:fs';
import path from 'node:path';
import { packageVersion, parseServerArgs, renderHelp, ServerHelp } from './server-args';

const help: ServerHelp = {
  command: 'node dist/apps/x/src/main.js',
  summary: 'x: a server',
  variables: [
    { name: 'PORT', meaning: 'listen port' },
    { name: 'ADMIN_TOKEN', meaning: 'bearer token' },
  ],
  defaults: { PORT: 8080 },
};

describe('parseServerArgs', () => {
  it('runs with no arguments and answers --help, -h, --version, -V', () => {
    expect(parseServerArgs([])).toEqual({ kind: 'run' });
    expect(parseServerArgs(['--help'])).toEqual({ kind: 'help' });
    expect(parseServerArgs(['-h'])).toEqual({ kind: 'help' });
    expect(parseServerArgs(['--version'])).toEqual({ kind: 'version' });
    expect(parseServerArgs(['-V'])).toEqual({ kind: 'version' });
  });
  it('takes a config file with --config FILE or --config=FILE', () => {
    expect(parseServerArgs(['--config', 'a.yaml'])).toEqual({ kind: 'run', config: 'a.yaml' });
    expect(parseServerArgs(['--config=b.yaml'])).toEqual({ kind: 'run', config: 'b.yaml' });
    for (const bad of [['--config'], ['--config='], ['--config', '--help'], ['--config', 'a.yaml', 'b.yaml']]) {
      expect(parseServerArgs(bad)).toMatchObject({ kind: 'error' });
    }
  });
  it('refuses anything else, naming it, instead of starting', () => {
    const r = parseServerArgs(['--port', '80']);
    expect(r).toMatchObject({ kind: 'error' });
    expect((r as { message: string }).message).toContain('--port 80');
  });
});

describe('renderHelp', () => {
  it('lists every variable with its default, unset when it has none', () => {
    const text = renderHelp(help);
    expect(text).toMatch(/^ {2}PORT +8080 +listen port$/m);
    expect(text).toMatch(/^ {2}ADMIN_TOKEN +unset +bearer token$/m);
    expect(text).toContain('usage: node dist/apps/x/src/main.js [--help | --version | --config FILE]');
  });
  it('refuses a schema variable the help does not document', () => {
    expect(() => renderHelp({ ...help, defaults: { PORT: 8080, QUEUE_MAX: 1 } })).toThrow('--help does not document QUEUE_MAX');
  });
});

it('packageVersion reads the repository package.json', () => {
  const pkg = JSON.parse(readFileSync(path.resolve(__dirname, '../../../package.json'), 'utf8')) as { version: string };
  expect(packageVersion()).toBe(pkg.version);
});
