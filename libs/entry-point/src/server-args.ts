import { readFileSync } from 'node:fs';
import path from 'node:path';

/** What `--help` prints for one server: its variables, with defaults read from its own config schema. */
export interface ServerHelp {
  /** The command as the image and the README run it, e.g. `node dist/apps/proxy/src/main.js`. */
  command: string;
  summary: string;
  variables: readonly { name: string; meaning: string }[];
  /** The config as parsed from an empty environment: every default, by variable name. */
  defaults: Record<string, unknown>;
  notes?: readonly string[];
}

export type ServerArgs = { kind: 'run'; config?: string } | { kind: 'help' } | { kind: 'version' } | { kind: 'error'; message: string };

/**
 * Servers take their configuration from the environment and, optionally, a config file named by
 * `--config FILE` (or `--config=FILE`); otherwise the command line only asks for help or the version.
 */
export function parseServerArgs(argv: readonly string[]): ServerArgs {
  const [first, ...rest] = argv;
  if (first === undefined) return { kind: 'run' };
  if (rest.length === 0 && (first === '--help' || first === '-h')) return { kind: 'help' };
  if (rest.length === 0 && (first === '--version' || first === '-V')) return { kind: 'version' };
  if (first === '--config' && rest.length === 1 && rest[0] !== '' && !rest[0].startsWith('-')) return { kind: 'run', config: rest[0] };
  if (first.startsWith('--config=') && rest.length === 0 && first.length > '--config='.length) return { kind: 'run', config: first.slice('--config='.length) };
  if (first === '--config' || first === '--config=') return { kind: 'error', message: '--config needs a file path (see --help)' };
  return { kind: 'error', message: `unknown argument: ${argv.join(' ')} (servers are configured through environment variables or --config FILE; see --help)` };
}

export function renderHelp(help: ServerHelp): string {
  const undocumented = Object.keys(help.defaults).filter((k) => !help.variables.some((v) => v.name === k));
  // A variable added to a schema must be added to --help (and the README) too.
  if (undocumented.length) throw new Error(`--help does not document ${undocumented.join(', ')}`);
  const rows = help.variables.map((v) => [v.name, help.defaults[v.name] === undefined ? 'unset' : String(help.defaults[v.name]), v.meaning]);
  const w0 = Math.max(...rows.map((r) => r[0].length), 'VARIABLE'.length);
  const w1 = Math.max(...rows.map((r) => r[1].length), 'DEFAULT'.length);
  const line = (r: string[]) => `  ${r[0].padEnd(w0)}  ${r[1].padEnd(w1)}  ${r[2]}`.trimEnd();
  return [
    `${help.summary}`,
    '',
    `usage: ${help.command} [--help | --version | --config FILE]`,
    '',
    'Configured by environment variables (an empty value means unset), over an optional YAML config file',
    '(--config FILE or SWITCHYARD_CONFIG; keys are these names in lower case; see examples/switchyard.yaml):',
    line(['VARIABLE', 'DEFAULT', 'MEANING']),
    ...rows.map(line),
    ...(help.notes?.length ? ['', ...help.notes] : []),
    '',
    'Signals: SIGTERM and SIGINT stop the server gracefully; exit status 0 after a clean stop, 2 on bad configuration.',
    '',
  ].join('\n');
}

/** The version of the package this code ships in (its package.json, found above the source or dist/ file). */
export function packageVersion(from = __dirname): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'switchyard' && pkg.version) return pkg.version;
    } catch {
      // No package.json here: look one level up.
    }
    if (path.dirname(dir) === dir) return 'unknown';
  }
}

/**
 * Handles `--help` and `--version` (print, exit 0) and refuses anything else (exit 2),
 * before any config is read, so help works whatever the environment holds.
 */
export function serverArgsOrExit(argv: readonly string[], help: () => ServerHelp): { config?: string } {
  const args = parseServerArgs(argv);
  if (args.kind === 'run') return { config: args.config };
  if (args.kind === 'error') {
    process.stderr.write(`${args.message}\n`);
    process.exit(2);
  }
  process.stdout.write(args.kind === 'help' ? renderHelp(help()) : `switchyard ${packageVersion()}\n`);
  process.exit(0);
}
