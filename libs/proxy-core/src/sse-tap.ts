import { StringDecoder } from 'node:string_decoder';
import { Transform, TransformCallback } from 'node:stream';
import { createParser, EventSourceParser } from 'eventsource-parser';
import type { BoundHistogram } from './bound-metrics';

/** Token counts as the proxy keeps them (an answer's `usage`). */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
}

/** What a tap writes: the Exchange's fields (kept as an interface so specs need no sockets). */
export interface TapTarget {
  usage: Usage | null;
  firstTokenAt: number | null;
}

const USAGE_KEY = Buffer.from('"usage"');

const count = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/**
 * A `usage` object as OpenAI-compatible servers send it; embeddings have no completion tokens (a
 * measured zero). The Responses API names them input_tokens and output_tokens.
 */
function toUsage(u: unknown): Usage | null {
  if (typeof u !== 'object' || u === null) return null;
  const o = u as Record<string, unknown>;
  const prompt_tokens = o.prompt_tokens ?? o.input_tokens;
  const completion_tokens = o.completion_tokens ?? o.output_tokens;
  if (!count(prompt_tokens)) return null;
  if (completion_tokens === undefined) return { prompt_tokens, completion_tokens: 0 };
  return count(completion_tokens) ? { prompt_tokens, completion_tokens } : null;
}

/** Whether `"usage"` at `at` is followed by a non-null value: OpenAI sends `"usage":null` in every chunk of a stream that asked for usage. */
function usageValueAt(s: string, at: number): boolean {
  let i = at + 7;
  while (i < s.length && (s.charCodeAt(i) === 32 || s.charCodeAt(i) === 58 /* : */)) i++;
  return s.charCodeAt(i) === 123; /* { */
}

/**
 * The usage of one SSE data payload, and whether the event is a usage chunk only (no
 * choices: the one the proxy strips when it asked for it). JSON is parsed only when a
 * non-null `"usage"` appears in it: once per stream.
 */
export function usageOfEvent(data: string): { usage: Usage; usageOnly: boolean } | null {
  const at = data.indexOf('"usage"');
  if (at < 0 || !usageValueAt(data, at)) return null;
  let parsed: { usage?: unknown; choices?: unknown; response?: { usage?: unknown } };
  try {
    parsed = JSON.parse(data) as typeof parsed;
  } catch {
    return null;
  }
  // The Responses API's stream carries it in response.completed's response.
  const usage = toUsage(parsed?.usage ?? parsed?.response?.usage);
  if (!usage) return null;
  return { usage, usageOnly: Array.isArray(parsed.choices) && parsed.choices.length === 0 };
}

/**
 * The usage of a whole JSON body without parsing the body: the last `"usage"` key (it comes
 * after `choices` or `data` in OpenAI-compatible answers, so the scan from the end is short
 * even for a large embeddings answer), its object cut out by brace matching, then parsed.
 * A `"usage"` inside a string cannot match: quotes in JSON strings are escaped.
 */
export function usageOfBody(body: Buffer): Usage | null {
  const at = body.lastIndexOf(USAGE_KEY);
  if (at < 0) return null;
  let i = at + 7;
  while (i < body.length && (body[i] === 32 || body[i] === 58 || body[i] === 10 || body[i] === 13 || body[i] === 9)) i++;
  if (body[i] !== 123) return null;
  const start = i;
  let depth = 0;
  let inString = false;
  for (; i < body.length; i++) {
    const c = body[i];
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123) depth++;
    else if (c === 125 && --depth === 0) break;
  }
  if (depth !== 0) return null;
  try {
    return toUsage(JSON.parse(body.toString('utf8', start, i + 1)));
  } catch {
    return null;
  }
}

/**
 * Watches an SSE answer as it passes to the client, beside the pipeline (a 'data' listener):
 * it never holds, copies into the client's path or delays a byte. Parsed incrementally with
 * eventsource-parser, so events split anywhere across chunks are seen whole. Time to first
 * token is the first data event; inter-token latency the gaps between the following ones; the
 * usage chunk (and `[DONE]`) are not tokens.
 */
export class SseTap {
  private readonly parser: EventSourceParser;
  private readonly decoder = new StringDecoder('utf8');
  private last = 0;

  constructor(
    private readonly target: TapTarget,
    private readonly itl: BoundHistogram,
    private readonly now: () => number = () => performance.now(),
    /** Also shown each event's data (the Responses API's id binding), so one parser serves the stream. */
    private readonly also?: (data: string) => void,
  ) {
    this.parser = createParser({ onEvent: (e) => this.onData(e.data) });
  }

  /** Attaches to a body about to be piped: same chunks, same tick as the pipe's own listener. */
  static attach(body: NodeJS.ReadableStream, target: TapTarget, itl: BoundHistogram, also?: (data: string) => void): SseTap {
    const tap = new SseTap(target, itl, undefined, also);
    body.on('data', (chunk: Buffer) => tap.feed(chunk));
    return tap;
  }

  feed(chunk: Buffer): void {
    this.parser.feed(this.decoder.write(chunk));
  }

  private onData(data: string): void {
    if (data === '[DONE]') return;
    this.also?.(data);
    const u = usageOfEvent(data);
    if (u) {
      this.target.usage = u.usage;
      if (u.usageOnly) return;
    }
    const t = this.now();
    if (this.target.firstTokenAt === null) this.target.firstTokenAt = t;
    else this.itl.observe((t - this.last) / 1000);
    this.last = t;
  }
}

/**
 * Ends of the complete events in `buf` (each just past its blank line), by the SSE line rules
 * (CRLF, LF or CR). Line breaks are ASCII, never inside a UTF-8 sequence, so bytes will do.
 * A CR as the last byte might be the first half of a CRLF: the scan stops before it.
 */
function eventEnds(buf: Buffer): number[] {
  const ends: number[] = [];
  let lineStart = 0;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (c !== 10 && c !== 13) continue;
    let next = i + 1;
    if (c === 13) {
      if (next === buf.length) break;
      if (buf[next] === 10) next++;
    }
    if (i === lineStart) ends.push(next);
    lineStart = next;
    i = next - 1;
  }
  return ends;
}

/** The data of one raw event (its `data:` lines joined), as the SSE rules read it. */
function dataOf(event: string): string {
  const lines = event.split(/\r\n|\r|\n/);
  const data: string[] = [];
  for (const l of lines) if (l.startsWith('data:')) data.push(l.charCodeAt(5) === 32 ? l.slice(6) : l.slice(5));
  return data.join('\n');
}

/**
 * Removes the usage chunk from a stream whose usage the proxy asked for on the client's
 * behalf (USAGE_FROM_STREAMS), so the client gets the stream it asked for. Only those streams
 * pay for it: complete events are passed on as the same buffers unless one mentions `usage`;
 * a partial event waits for its end (a client cannot act on half an event anyway).
 */
export class UsageStripper extends Transform {
  private tail: Buffer | null = null;

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    const buf = this.tail ? Buffer.concat([this.tail, chunk]) : chunk;
    const ends = eventEnds(buf);
    const end = ends.length ? ends[ends.length - 1] : 0;
    this.tail = end === buf.length ? null : buf.subarray(end);
    if (end === 0) return done();
    const complete = end === buf.length ? buf : buf.subarray(0, end);
    if (complete.indexOf('"usage"') < 0) return done(null, complete);
    const kept: Buffer[] = [];
    let from = 0;
    for (const to of ends) {
      const event = complete.subarray(from, to);
      from = to;
      if (event.indexOf('"usage"') >= 0 && usageOfEvent(dataOf(event.toString('utf8')))?.usageOnly) continue;
      kept.push(event);
    }
    done(null, kept.length === 1 ? kept[0] : Buffer.concat(kept));
  }

  override _flush(done: TransformCallback): void {
    done(null, this.tail ?? undefined);
  }
}

/** Routes whose streams carry a usage chunk when asked with `stream_options.include_usage`. */
const USAGE_ROUTES = new Set(['/v1/chat/completions', '/v1/completions']);

/**
 * USAGE_FROM_STREAMS: a streamed chat or completions request that did not ask for usage is
 * sent asking for it, and its answer must have the usage chunk stripped. Returns the body to
 * send, re-serialised only for those requests, and whether to strip.
 */
export function askForUsage(route: string, parsed: Record<string, unknown>, body: Buffer): { body: Buffer; strip: boolean } {
  if (!USAGE_ROUTES.has(route) || parsed.stream !== true) return { body, strip: false };
  const options = parsed.stream_options;
  if (typeof options === 'object' && options !== null && (options as Record<string, unknown>).include_usage === true) return { body, strip: false };
  const asked = { ...parsed, stream_options: { ...(typeof options === 'object' && options !== null ? options : {}), include_usage: true } };
  return { body: Buffer.from(JSON.stringify(asked)), strip: true };
}
