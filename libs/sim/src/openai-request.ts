/**
 * Reads the OpenAI request fields the simulator honours into a plan, and rejects bad ones as an
 * engine does: 400 naming the field, nothing started.
 */

export class BadRequest extends Error {
  constructor(message: string, readonly param: string) {
    super(`${param}: ${message}`);
  }
}

export interface ToolCall {
  name: string;
  /** JSON text, as OpenAI sends it. */
  arguments: string;
}

export interface GenerationPlan {
  n: number;
  stream: boolean;
  includeUsage: boolean;
  /** max_tokens / max_completion_tokens, when the request gives one. */
  maxTokens?: number;
  ignoreEos: boolean;
  promptTokens: number;
  toolCall?: ToolCall;
}

export interface EmbeddingPlan {
  inputs: string[];
  base64: boolean;
  dimensions?: number;
}

type Body = Record<string, unknown>;
type Tool = { name: string; parameters?: { properties?: Record<string, { type?: unknown; enum?: unknown[] }>; required?: unknown } };

const isObject = (v: unknown): v is Body => typeof v === 'object' && v !== null && !Array.isArray(v);
const given = (v: unknown) => v !== undefined && v !== null;

function positiveInt(body: Body, field: string, max: number): number | undefined {
  const v = body[field];
  if (!given(v)) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > max) throw new BadRequest(`must be an integer from 1 to ${max}`, field);
  return v;
}

function flag(body: Body, field: string): boolean {
  const v = body[field];
  if (!given(v)) return false;
  if (typeof v !== 'boolean') throw new BadRequest('must be true or false', field);
  return v;
}

/** Rough token count: four characters a token, as the sim has always counted. */
export const tokensOf = (text: string) => Math.max(1, Math.ceil(text.length / 4));

function readTools(body: Body): Tool[] {
  if (!given(body.tools)) return [];
  if (!Array.isArray(body.tools)) throw new BadRequest('must be an array of {type: "function", function: {name}}', 'tools');
  return body.tools.map((t, i) => {
    const fn = isObject(t) && t.type === 'function' && isObject(t.function) ? t.function : undefined;
    if (!fn || typeof fn.name !== 'string' || !fn.name) throw new BadRequest('must be {type: "function", function: {name, parameters?}}', `tools[${i}]`);
    return { name: fn.name, parameters: isObject(fn.parameters) ? (fn.parameters as Tool['parameters']) : undefined };
  });
}

const lastUserText = (messages: unknown): string => {
  const users = Array.isArray(messages) ? messages.filter((m) => isObject(m) && m.role === 'user') : [];
  const content = (users.at(-1) as Body | undefined)?.content;
  if (typeof content === 'string') return content;
  return Array.isArray(content) ? content.map((p) => (isObject(p) && typeof p.text === 'string' ? p.text : '')).join(' ') : '';
};

/** Placeholder arguments that satisfy the tool's required parameters: an enum's first value, else one per type. */
function argumentsFor(tool: Tool): string {
  const props = tool.parameters?.properties ?? {};
  const required = Array.isArray(tool.parameters?.required) ? (tool.parameters.required as string[]) : Object.keys(props);
  const byType: Record<string, unknown> = { string: 'sim', integer: 1, number: 1, boolean: true, array: [], object: {} };
  const args: Record<string, unknown> = {};
  for (const key of required) {
    const p = props[key] ?? {};
    args[key] = Array.isArray(p.enum) && p.enum.length ? p.enum[0] : byType[String(p.type)] ?? 'sim';
  }
  return JSON.stringify(args);
}

/**
 * Which tool, if any, the simulated model calls: the one tool_choice names; with "required" the tool
 * the last user message names, else the first; with "auto" (the default with tools) only a tool the
 * last user message names; never with "none".
 */
function chooseTool(body: Body, tools: Tool[]): Tool | undefined {
  const choice = body.tool_choice ?? 'auto';
  if (choice === 'none') return undefined;
  if (choice === 'auto' || choice === 'required') {
    if (choice === 'required' && tools.length === 0) throw new BadRequest('"required" needs tools', 'tool_choice');
    const text = lastUserText(body.messages);
    return tools.find((t) => text.includes(t.name)) ?? (choice === 'required' ? tools[0] : undefined);
  }
  const name = isObject(choice) && choice.type === 'function' && isObject(choice.function) ? choice.function.name : undefined;
  if (typeof name !== 'string') throw new BadRequest('must be "none", "auto", "required" or {type: "function", function: {name}}', 'tool_choice');
  const tool = tools.find((t) => t.name === name);
  if (!tool) throw new BadRequest(`names function "${name}", which is not in tools`, 'tool_choice');
  return tool;
}

export function readGeneration(kind: 'chat' | 'completion', body: Body): GenerationPlan {
  const stream = flag(body, 'stream');
  if (given(body.stream_options)) {
    if (!isObject(body.stream_options)) throw new BadRequest('must be an object', 'stream_options');
    if (!stream) throw new BadRequest('only allowed when stream is true', 'stream_options');
  }
  const includeUsage = isObject(body.stream_options) ? flag(body.stream_options, 'include_usage') : false;
  const maxTokens = positiveInt(body, 'max_completion_tokens', 1_000_000) ?? positiveInt(body, 'max_tokens', 1_000_000);
  const promptText = kind === 'chat' ? JSON.stringify(body.messages ?? '') : String(body.prompt ?? '');
  const tool = kind === 'chat' ? chooseTool(body, readTools(body)) : undefined;
  return {
    n: positiveInt(body, 'n', 128) ?? 1,
    stream,
    includeUsage,
    maxTokens,
    ignoreEos: flag(body, 'ignore_eos'),
    promptTokens: tokensOf(promptText),
    toolCall: tool && { name: tool.name, arguments: argumentsFor(tool) },
  };
}

export function readEmbedding(body: Body): EmbeddingPlan {
  const input = body.input;
  const bad = () => new BadRequest('must be a non-empty string, an array of strings, or an array (of arrays) of token ids', 'input');
  let inputs: string[];
  if (typeof input === 'string') inputs = [input];
  else if (Array.isArray(input) && input.length > 0 && input.every((s) => typeof s === 'string')) inputs = input as string[];
  else if (Array.isArray(input) && input.length > 0 && input.every((t) => Number.isInteger(t))) inputs = [(input as number[]).join(' ')];
  else if (Array.isArray(input) && input.length > 0 && input.every((a) => Array.isArray(a) && a.length > 0 && a.every((t) => Number.isInteger(t)))) inputs = (input as number[][]).map((a) => a.join(' '));
  else throw bad();
  if (inputs.some((s) => s.length === 0)) throw bad();
  const format = body.encoding_format;
  if (given(format) && format !== 'float' && format !== 'base64') throw new BadRequest('must be "float" or "base64"', 'encoding_format');
  return { inputs, base64: format === 'base64', dimensions: positiveInt(body, 'dimensions', 8192) };
}
