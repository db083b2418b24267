import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isMap, isScalar, isSeq, LineCounter, parseDocument, YAMLMap, Node as YamlNode } from 'yaml';
import { apiKeyNameSchema, instanceApiKeySchema, instanceIdSchema, instanceUrlSchema, modelNameSchema } from '@switchyard/contracts';
import { z, ZodEffects, ZodObject, ZodRawShape, ZodType, ZodTypeDef } from 'zod';

/** The sections of a Switchyard config file; each server reads its own (npm start reads both). */
export const CONFIG_SECTIONS = ['control_plane', 'proxy', 'sim'] as const;
export type ConfigSection = (typeof CONFIG_SECTIONS)[number];

/** One instance the operator declares in the file (or in INSTANCES): probed like any other. */
export const declaredInstanceSchema = z
  .object({
    url: instanceUrlSchema,
    /** Read from the engine's /v1/models when omitted. */
    models: z.array(modelNameSchema).min(1).max(256).optional(),
    id: instanceIdSchema.optional(),
    weight: z.number().positive().max(1000).optional(),
    max_inflight: z.number().int().min(1).max(1_000_000).optional(),
    /** The engine's own key (vLLM --api-key): sent by proxies and probes, never shown or logged. */
    api_key: instanceApiKeySchema.optional(),
  })
  .strict();
export type DeclaredInstance = z.infer<typeof declaredInstanceSchema>;

/**
 * A client API key declared in the file (`keys:`): the secret itself, or only its sha256 so the
 * file holds nothing usable. Written to the store by the control plane at start.
 */
export const declaredKeySchema = z
  .object({
    name: apiKeyNameSchema,
    key: z.string().regex(/^[\x21-\x7E]{16,512}$/, 'must be 16-512 printable characters without spaces').optional(),
    key_sha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex characters (sha256 of the key)').optional(),
    models: z.array(modelNameSchema).min(1).max(256).optional(),
    rpm: z.number().int().min(1).max(10_000_000).optional(),
    tpm: z.number().int().min(1).max(10_000_000_000).optional(),
  })
  .strict()
  .refine((k) => (k.key === undefined) !== (k.key_sha256 === undefined), { message: 'give exactly one of key and key_sha256', path: ['key'] });
export type DeclaredKey = z.infer<typeof declaredKeySchema>;
const DECLARED_KEY_FIELDS = 'name, key or key_sha256, models, rpm, tpm';

interface Setting {
  value: string;
  line: number;
}

/** A parsed config file: per section, its settings as env-style strings with their lines; and the declared instances. */
export interface ConfigFile {
  path: string;
  sections: Partial<Record<ConfigSection, Map<string, Setting>>>;
  instances: DeclaredInstance[];
  keys: DeclaredKey[];
}

/**
 * The config file a server was given: `--config FILE` (the path passed in) wins over
 * SWITCHYARD_CONFIG; undefined when neither names one. Read and checked once, at start.
 */
export function configFileFrom(argPath: string | undefined, env: NodeJS.ProcessEnv = process.env): ConfigFile | undefined {
  const file = argPath || env.SWITCHYARD_CONFIG || undefined;
  return file ? readConfigFile(file) : undefined;
}

/** Reads and checks a config file's shape: YAML errors, unknown sections and non-scalar settings stop here, naming file and line. */
export function readConfigFile(file: string): ConfigFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`invalid configuration: ${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const name = path.basename(file);
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const lineOf = (node: YamlNode | null | undefined) => (node?.range ? lines.linePos(node.range[0]).line : 1);
  const fail = (line: number, where: string, message: string): never => {
    throw new Error(`invalid configuration: ${name}:${line}: ${where}${where ? ': ' : ''}${message}`);
  };
  if (doc.errors.length) {
    const e = doc.errors[0];
    fail(lines.linePos(e.pos[0]).line, '', `not valid YAML: ${e.message.split('\n')[0]}`);
  }
  const out: ConfigFile = { path: file, sections: {}, instances: [], keys: [] };
  if (doc.contents === null) return out;
  if (!isMap(doc.contents)) fail(lineOf(doc.contents as YamlNode), '', 'must be a mapping of sections (control_plane, proxy, sim, instances, keys)');
  for (const pair of (doc.contents as YAMLMap).items) {
    const key = isScalar(pair.key) ? String(pair.key.value) : '';
    const line = lineOf(pair.key as YamlNode);
    const value = pair.value as YamlNode | null;
    if (key === 'instances') {
      out.instances = readInstances(value, (node) => lineOf(node), fail);
      continue;
    }
    if (key === 'keys') {
      out.keys = readKeys(value, (node) => lineOf(node), fail);
      continue;
    }
    if (!(CONFIG_SECTIONS as readonly string[]).includes(key)) fail(line, key, `unknown section; valid: ${[...CONFIG_SECTIONS, 'instances', 'keys'].join(', ')}`);
    const settings = new Map<string, Setting>();
    if (value !== null && !isMap(value)) fail(line, key, 'must be a mapping of settings');
    for (const item of (value as YAMLMap | null)?.items ?? []) {
      const setting = isScalar(item.key) ? String(item.key.value) : '';
      const at = lineOf(item.key as YamlNode);
      if (!isScalar(item.value)) fail(at, `${key}.${setting}`, 'must be a single value');
      const v = (item.value as { value: unknown }).value;
      if (v === null) continue;
      settings.set(setting.toUpperCase(), { value: String(v), line: at });
    }
    out.sections[key as ConfigSection] = settings;
  }
  return out;
}

function readInstances(node: YamlNode | null, lineOf: (n: YamlNode | null | undefined) => number, fail: (line: number, where: string, message: string) => never): DeclaredInstance[] {
  if (node === null) return [];
  if (!isSeq(node)) return fail(lineOf(node), 'instances', 'must be a list of {url, models, id, weight, max_inflight, api_key}');
  return node.items.map((item, i) => {
    const r = declaredInstanceSchema.safeParse((item as YamlNode & { toJSON(): unknown }).toJSON());
    if (r.success) return r.data;
    const issue = r.error.issues[0];
    const key = issue.path[0];
    // Point at the offending key's line where there is one, else at the list item.
    const keyNode = isMap(item) && key !== undefined ? (item.items.find((p) => isScalar(p.key) && p.key.value === key)?.key as YamlNode | undefined) : undefined;
    const unknown = issue.code === 'unrecognized_keys' ? issue.keys[0] : undefined;
    const unknownNode = isMap(item) && unknown ? (item.items.find((p) => isScalar(p.key) && p.key.value === unknown)?.key as YamlNode | undefined) : undefined;
    const where = `instances[${i}]${unknown ? `.${unknown}` : issue.path.length ? `.${issue.path.join('.')}` : ''}`;
    return fail(lineOf(unknownNode ?? keyNode ?? (item as YamlNode)), where, unknown ? 'unknown key; valid: url, models, id, weight, max_inflight, api_key' : issue.message);
  });
}

/** Like readInstances; messages name the entry and field, never a key's value. */
function readKeys(node: YamlNode | null, lineOf: (n: YamlNode | null | undefined) => number, fail: (line: number, where: string, message: string) => never): DeclaredKey[] {
  if (node === null) return [];
  if (!isSeq(node)) return fail(lineOf(node), 'keys', `must be a list of {${DECLARED_KEY_FIELDS}}`);
  const names = new Set<string>();
  return node.items.map((item, i) => {
    const r = declaredKeySchema.safeParse((item as YamlNode & { toJSON(): unknown }).toJSON());
    if (r.success) {
      if (names.has(r.data.name)) fail(lineOf(item as YamlNode), `keys[${i}].name`, `'${r.data.name}' is used twice`);
      names.add(r.data.name);
      return r.data;
    }
    const issue = r.error.issues[0];
    const unknown = issue.code === 'unrecognized_keys' ? issue.keys[0] : undefined;
    const field = unknown ?? issue.path[0];
    const keyNode = isMap(item) && field !== undefined ? (item.items.find((p) => isScalar(p.key) && p.key.value === field)?.key as YamlNode | undefined) : undefined;
    const where = `keys[${i}]${unknown ? `.${unknown}` : issue.path.length ? `.${issue.path.join('.')}` : ''}`;
    return fail(lineOf(keyNode ?? (item as YamlNode)), where, unknown ? `unknown key; valid: ${DECLARED_KEY_FIELDS}` : issue.message);
  });
}

function shapeOf(schema: ZodType<unknown, ZodTypeDef, unknown>): ZodRawShape {
  let s: unknown = schema;
  while (s instanceof ZodEffects) s = s.innerType();
  if (!(s instanceof ZodObject)) throw new Error('settings schema must be a zod object');
  return s.shape as ZodRawShape;
}

/**
 * Parses a server's settings once at start: the config file's section (if any) under the
 * environment, through the same zod schema. An empty variable counts as unset. A bad value
 * throws a message naming the variable, or the file, line and key it came from.
 */
export function parseSettings<T>(schema: ZodType<T, ZodTypeDef, unknown>, env: NodeJS.ProcessEnv, file?: ConfigFile, sections: readonly ConfigSection[] = []): T {
  const known = new Set(Object.keys(shapeOf(schema)));
  const name = file ? path.basename(file.path) : '';
  const fromFile = new Map<string, { section: ConfigSection; setting: Setting }>();
  for (const section of sections) {
    for (const [key, setting] of file?.sections[section] ?? []) {
      if (!known.has(key)) {
        throw new Error(`invalid configuration: ${name}:${setting.line}: ${section}.${key.toLowerCase()}: unknown setting; valid: ${[...known].map((k) => k.toLowerCase()).join(', ')}`);
      }
      fromFile.set(key, { section, setting });
    }
  }
  const input: Record<string, string | undefined> = {};
  for (const [key, { setting }] of fromFile) input[key] = setting.value;
  for (const key of known) {
    const v = env[key];
    if (v !== undefined && v !== '') {
      input[key] = v;
      fromFile.delete(key);
    }
  }
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const key = String(issue.path[0] ?? '');
  const origin = fromFile.get(key);
  if (origin) throw new Error(`invalid configuration: ${name}:${origin.setting.line}: ${origin.section}.${key.toLowerCase()}: ${issue.message}`);
  throw new Error(`invalid configuration: ${issue.path.join('.')}: ${issue.message}`);
}

/** Instances declared in INSTANCES=url,url (env) and in the file's `instances:` list; the env list is checked like the file's. */
export function declaredInstances(env: NodeJS.ProcessEnv, file?: ConfigFile): DeclaredInstance[] {
  const fromEnv = (env.INSTANCES ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((url) => {
      const r = declaredInstanceSchema.safeParse({ url });
      if (!r.success) throw new Error(`invalid configuration: INSTANCES: ${url}: ${r.error.issues[0].message}`);
      return r.data;
    });
  return [...(file?.instances ?? []), ...fromEnv];
}
