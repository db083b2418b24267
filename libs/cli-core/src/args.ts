import { parseArgs } from 'node:util';

export const DEFAULT_CONTROL_PLANE_URL = 'http://127.0.0.1:8081';
export const DEFAULT_WATCH_INTERVAL_S = 1;
/** Faster than this would only load the control plane, not show anything new. */
const MIN_WATCH_INTERVAL_S = 0.2;

/** A mistake of the user's: shown as one line on stderr, exit code 1, never a stack trace. */
export class CliError extends Error {}

export interface Connection {
  url: string;
  token?: string;
}

export type Command =
  | { name: 'help'; topic?: CommandName }
  | { name: 'status'; json: boolean }
  | { name: 'instances'; all: boolean; json: boolean; verbose: boolean }
  | { name: 'watch'; all: boolean; verbose: boolean; intervalS: number }
  | { name: 'register'; url: string; models: string[]; id?: string; maxInflight?: number; weight?: number; probe: boolean; apiKey?: string }
  | { name: 'unregister'; id: string }
  | { name: 'keys'; action: 'list'; json: boolean }
  | { name: 'keys'; action: 'create'; keyName: string; models: string[]; rpm?: number; tpm?: number; json: boolean }
  | { name: 'keys'; action: 'revoke'; id: string };

export type CommandName = Exclude<Command['name'], 'help'>;

export interface Invocation {
  connection: Connection;
  command: Command;
}

const OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  all: { type: 'boolean', short: 'a' },
  json: { type: 'boolean' },
  verbose: { type: 'boolean', short: 'v' },
  interval: { type: 'string', short: 'n' },
  model: { type: 'string', short: 'm', multiple: true },
  id: { type: 'string' },
  'max-inflight': { type: 'string' },
  weight: { type: 'string' },
  'no-probe': { type: 'boolean' },
  rpm: { type: 'string' },
  tpm: { type: 'string' },
  'api-key': { type: 'string' },
  'api-key-env': { type: 'string' },
} as const;

type OptionName = keyof typeof OPTIONS;

const GLOBAL_OPTIONS: OptionName[] = ['url', 'token', 'help'];

/** Which options each command takes, besides the global ones. */
const COMMAND_OPTIONS: Record<CommandName, OptionName[]> = {
  status: ['json'],
  instances: ['all', 'json', 'verbose'],
  watch: ['all', 'verbose', 'interval'],
  register: ['model', 'id', 'max-inflight', 'weight', 'no-probe', 'api-key', 'api-key-env'],
  unregister: [],
  keys: ['json', 'model', 'rpm', 'tpm'],
};

/** `keys` takes an action and its argument: list, create NAME, revoke ID. */
const KEY_ACTIONS: Record<string, string[]> = { list: [], create: ['NAME'], revoke: ['ID'] };

const POSITIONALS: Record<CommandName, string[]> = {
  status: [],
  instances: [],
  watch: [],
  register: ['URL'],
  unregister: ['ID'],
  keys: ['ACTION'],
};

function isCommandName(name: string): name is CommandName {
  return Object.prototype.hasOwnProperty.call(COMMAND_OPTIONS, name);
}

/** Turns argv (without node and the script) and the environment into what to do, or throws CliError. */
export function parseInvocation(argv: readonly string[], env: NodeJS.ProcessEnv): Invocation {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; strict: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    // Node's messages go on about '--' for positionals; the first sentence is the useful part.
    const message = (err as Error).message.split(/\.\s/)[0].replace(/\.$/, '');
    throw new CliError(`${message} (see switchyard --help)`);
  }
  const { values, positionals } = parsed;
  const [name, ...rest] = positionals;

  if (name === 'help') {
    const topic = rest[0];
    if (topic !== undefined && !isCommandName(topic)) throw new CliError(`unknown command '${topic}' (see switchyard --help)`);
    return { connection: connection(values, env), command: { name: 'help', topic } };
  }
  if (name === undefined) {
    if (values.help) return { connection: connection(values, env), command: { name: 'help' } };
    throw new CliError('no command given (see switchyard --help)');
  }
  if (!isCommandName(name)) throw new CliError(`unknown command '${name}' (see switchyard --help)`);
  if (values.help) return { connection: connection(values, env), command: { name: 'help', topic: name } };

  const allowed = new Set<string>([...GLOBAL_OPTIONS, ...COMMAND_OPTIONS[name]]);
  for (const given of Object.keys(values)) {
    if (!allowed.has(given)) throw new CliError(`--${given} is not an option of '${name}' (see switchyard ${name} --help)`);
  }
  const action = name === 'keys' ? rest[0] : undefined;
  if (action !== undefined && !Object.prototype.hasOwnProperty.call(KEY_ACTIONS, action)) throw new CliError(`unknown action 'keys ${action}'; valid: ${Object.keys(KEY_ACTIONS).join(', ')} (see switchyard keys --help)`);
  const wanted = action !== undefined ? ['ACTION', ...KEY_ACTIONS[action]] : POSITIONALS[name];
  if (rest.length < wanted.length) throw new CliError(`'${name}' needs ${wanted.slice(rest.length).join(' ')} (see switchyard ${name} --help)`);
  if (rest.length > wanted.length) throw new CliError(`unexpected argument '${rest[wanted.length]}' (see switchyard ${name} --help)`);

  return { connection: connection(values, env), command: command(name, rest, values, env) };
}

function command(name: CommandName, args: string[], values: Partial<Record<OptionName, string | boolean | string[]>>, env: NodeJS.ProcessEnv): Command {
  switch (name) {
    case 'status':
      return { name, json: values.json === true };
    case 'instances':
      return { name, all: values.all === true, json: values.json === true, verbose: values.verbose === true };
    case 'watch': {
      const intervalS = values.interval === undefined ? DEFAULT_WATCH_INTERVAL_S : number('--interval', values.interval as string);
      if (intervalS < MIN_WATCH_INTERVAL_S) throw new CliError(`--interval must be at least ${MIN_WATCH_INTERVAL_S} (seconds)`);
      return { name, all: values.all === true, verbose: values.verbose === true, intervalS };
    }
    case 'register': {
      const models = (values.model as string[] | undefined) ?? [];
      if (models.length === 0) throw new CliError("'register' needs at least one --model (see switchyard register --help)");
      const url = httpUrl('URL', args[0]);
      const maxInflight = values['max-inflight'] === undefined ? undefined : number('--max-inflight', values['max-inflight'] as string);
      if (maxInflight !== undefined && (!Number.isInteger(maxInflight) || maxInflight < 1)) throw new CliError('--max-inflight must be a whole number of at least 1');
      const weight = values.weight === undefined ? undefined : number('--weight', values.weight as string);
      if (weight !== undefined && weight <= 0) throw new CliError('--weight must be greater than 0');
      if (values['api-key'] !== undefined && values['api-key-env'] !== undefined) throw new CliError('give --api-key or --api-key-env, not both');
      const keyEnv = values['api-key-env'] as string | undefined;
      const apiKey = keyEnv === undefined ? (values['api-key'] as string | undefined) : env[keyEnv];
      if (keyEnv !== undefined && !apiKey) throw new CliError(`--api-key-env: the environment variable ${keyEnv} is not set`);
      return { name, url, models, id: values.id as string | undefined, maxInflight, weight, probe: values['no-probe'] !== true, ...(apiKey !== undefined ? { apiKey } : {}) };
    }
    case 'unregister':
      return { name, id: args[0] };
    case 'keys':
      return keysCommand(args, values);
  }
}

function keysCommand(args: string[], values: Partial<Record<OptionName, string | boolean | string[]>>): Command {
  const action = args[0];
  const only = (allowed: OptionName[]) => {
    for (const o of ['json', 'model', 'rpm', 'tpm'] as const) if (values[o] !== undefined && !allowed.includes(o)) throw new CliError(`--${o} is not an option of 'keys ${action}' (see switchyard keys --help)`);
  };
  const limit = (flag: 'rpm' | 'tpm') => {
    if (values[flag] === undefined) return undefined;
    const v = number(`--${flag}`, values[flag] as string);
    if (!Number.isInteger(v) || v < 1) throw new CliError(`--${flag} must be a whole number of at least 1`);
    return v;
  };
  if (action === 'list') {
    only(['json']);
    return { name: 'keys', action, json: values.json === true };
  }
  if (action === 'create') {
    only(['json', 'model', 'rpm', 'tpm']);
    return { name: 'keys', action, keyName: args[1], models: (values.model as string[] | undefined) ?? [], rpm: limit('rpm'), tpm: limit('tpm'), json: values.json === true };
  }
  only([]);
  return { name: 'keys', action: 'revoke', id: args[1] };
}

function connection(values: { url?: string; token?: string }, env: NodeJS.ProcessEnv): Connection {
  const fromFlag = values.url !== undefined;
  const raw = values.url ?? (env.CONTROL_PLANE_URL || DEFAULT_CONTROL_PLANE_URL);
  const url = httpUrl(fromFlag ? '--url' : 'CONTROL_PLANE_URL', raw).replace(/\/+$/, '');
  const token = values.token ?? (env.ADMIN_TOKEN || undefined);
  return { url, token };
}

function httpUrl(what: string, raw: string): string {
  if (!URL.canParse(raw) || !['http:', 'https:'].includes(new URL(raw).protocol)) {
    throw new CliError(`${what} must be an http:// or https:// URL, got '${raw}'`);
  }
  return raw;
}

function number(flag: string, raw: string): number {
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value)) throw new CliError(`${flag} must be a number, got '${raw}'`);
  return value;
}

export const USAGE: Record<'main' | CommandName, string> = {
  main: `Usage: switchyard <command> [options]

Commands:
  status                     control plane health and fleet totals
  instances [--all] [--json] [-v]
                             one row per instance: models, alive, in flight, qps_1m, gpu_util, last seen
  watch [--interval S] [--all] [-v]
                             the instances view, refreshed in place until Ctrl-C
  register URL --model M [--model M2] [--id ID] [--max-inflight N] [--weight W] [--api-key KEY] [--no-probe]
                             add an instance (or update it; its live in-flight count is kept)
  unregister ID              remove an instance
  keys list|create|revoke    client API keys: list (limits, usage this minute), create NAME, revoke ID
  help [COMMAND]             this text, or a command's

Global options:
  --url URL      control plane (default: $CONTROL_PLANE_URL, else ${DEFAULT_CONTROL_PLANE_URL})
  --token TOKEN  admin token (default: $ADMIN_TOKEN)
  -h, --help     help

'-' in a column means unknown (no heartbeat has reported it); 0 is a measured zero.
`,
  status: `Usage: switchyard status [--json]

Control plane health, alive and expired instances and proxies, requests in flight and queued.
  --json   print GET /debug/status as JSON
`,
  instances: `Usage: switchyard instances [--all] [--json] [-v]

One row per instance: id, models, alive, in flight, qps_1m, gpu_util, last seen.
  -a, --all       include expired instances
  --json          print GET /debug/instance_loads as JSON
  -v, --verbose   also max in flight, weight, in flight by proxy, queued, url
`,
  watch: `Usage: switchyard watch [--interval S] [--all] [-v]

The instances view, redrawn in place every S seconds (default ${DEFAULT_WATCH_INTERVAL_S}) until Ctrl-C.
  -n, --interval S   seconds between refreshes (at least ${MIN_WATCH_INTERVAL_S})
  -a, --all          include expired instances
  -v, --verbose      the wide view of 'instances -v'
`,
  register: `Usage: switchyard register URL --model M [--model M2 …] [--id ID] [--max-inflight N] [--weight W] [--api-key KEY | --api-key-env NAME] [--no-probe]

Registers the model server at URL (POST /v1/instances). Re-registering keeps its live in-flight count.
The control plane first probes URL (GET /health, or /v1/models) and checks that /v1/models lists every
model; it refuses the registration (422) when not. It then probes the instance every PROBE_INTERVAL_S:
the instance stays alive while probes (or its own heartbeats) succeed within the control plane's TTL.
  -m, --model M        a model it serves (repeat for more)
  --id ID              instance id (default hp_HOST:PORT)
  --max-inflight N     never more than N requests at once
  --weight W           relative capacity (default 1)
  --api-key KEY        the engine's own key (vLLM --api-key): proxies and probes send it as Bearer; it is
                       never shown again (write-only). A key on the command line is visible to ps: prefer
  --api-key-env NAME   read that key from the environment variable NAME
  --no-probe           register without probing the URL first (an engine that is still starting)
`,
  unregister: `Usage: switchyard unregister ID

Removes the instance (DELETE /v1/instances/ID); proxies stop sending it requests.
`,
  keys: `Usage: switchyard keys list [--json]
       switchyard keys create NAME [--model M …] [--rpm N] [--tpm N] [--json]
       switchyard keys revoke ID

Client API keys, checked by proxies started with API_KEYS=required.
  list      one row per key: id, name, prefix, models, limits, requests and tokens this minute (GET /debug/keys)
  create    a new key (POST /v1/keys); its secret is printed once and cannot be read again
  revoke    ends a key at once on every proxy (DELETE /v1/keys/ID)
  -m, --model M   a model the key may use (repeat for more; default: every model)
  --rpm N         requests per minute, shared by all proxies (default: no limit)
  --tpm N         tokens per minute, shared by all proxies (default: no limit)
  --json          print the answer as JSON
`,
};
