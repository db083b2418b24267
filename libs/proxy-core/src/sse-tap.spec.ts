import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import fc from 'fast-check';
import { askForUsage, SseTap, TapTarget, UsageStripper, usageOfBody, usageOfEvent } from './sse-tap';

const token = (content: string, extra = '') => `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}}}]${extra}}\n\n`;
const usageChunk = 'data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":17,"completion_tokens":4,"total_tokens":21}}\n\n';
const DONE = 'data: [DONE]\n\n';
// Multi-byte characters, so a split can fall inside one; CRLF events too, so a split can fall between CR and LF.
const CONTENTS = ['Hé', 'llo ', '🚀', 'wörld'];
const streamText = (withUsage: boolean, nulls = false) =>
  CONTENTS.map((c, i) => (i === 1 ? token(c, nulls ? ',"usage":null' : '').replace(/\n/g, '\r\n') : token(c, nulls ? ',"usage":null' : ''))).join('') + (withUsage ? usageChunk : '') + DONE;

/** The bytes cut at the given positions (sorted, deduplicated, inside the buffer). */
function cut(bytes: Buffer, at: number[]): Buffer[] {
  const points = [...new Set(at.map((p) => p % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const p of points) {
    if (p > from) out.push(bytes.subarray(from, p));
    from = Math.max(from, p);
  }
  out.push(bytes.subarray(from));
  return out.filter((b) => b.length > 0);
}

const cuts = fc.array(fc.nat({ max: 2000 }), { maxLength: 40 });

function tapOver(chunks: Buffer[]) {
  let clock = 0;
  const gaps: number[] = [];
  const target: TapTarget = { usage: null, firstTokenAt: null };
  const tap = new SseTap(target, { observe: (v) => gaps.push(v) }, () => (clock += 1));
  for (const c of chunks) tap.feed(c);
  return { target, gaps };
}

async function strip(chunks: Buffer[]): Promise<string> {
  const out: Buffer[] = [];
  await pipeline(Readable.from(chunks), new UsageStripper(), async (src: AsyncIterable<Buffer>) => {
    for await (const c of src) out.push(c);
  });
  return Buffer.concat(out).toString('utf8');
}

describe('SseTap', () => {
  it('sees every data event, the usage chunk and the first token wherever the chunks are cut', () => {
    const bytes = Buffer.from(streamText(true));
    fc.assert(
      fc.property(cuts, (at) => {
        const { target, gaps } = tapOver(cut(bytes, at));
        // Four token events: the first is the first token (clock 1), three gaps of one tick; usage and [DONE] are not tokens.
        expect(target.firstTokenAt).toBe(1);
        expect(gaps).toEqual([0.001, 0.001, 0.001]);
        expect(target.usage).toEqual({ prompt_tokens: 17, completion_tokens: 4 });
      }),
    );
  });

  it('reads no usage from a stream without one, nor from `"usage":null` in every chunk', () => {
    expect(tapOver([Buffer.from(streamText(false, true))]).target.usage).toBeNull();
    expect(tapOver([Buffer.from(streamText(false))]).target).toEqual({ usage: null, firstTokenAt: 1 });
  });
});

describe('UsageStripper', () => {
  it('removes exactly the usage chunk and passes every other byte, wherever the chunks are cut', async () => {
    const withUsage = Buffer.from(streamText(true, true));
    const expected = streamText(false, true);
    await fc.assert(fc.asyncProperty(cuts, async (at) => expect(await strip(cut(withUsage, at))).toBe(expected)));
  });

  it('passes a stream without a usage chunk unchanged, an unfinished last event included', async () => {
    const text = streamText(false) + 'data: {"partial":';
    await fc.assert(fc.asyncProperty(cuts, async (at) => expect(await strip(cut(Buffer.from(text), at))).toBe(text)));
  });

  it('keeps a chunk that carries usage and choices (continuous usage stats)', async () => {
    const text = token('x', ',"usage":{"prompt_tokens":1,"completion_tokens":1}') + DONE;
    expect(await strip([Buffer.from(text)])).toBe(text);
  });
});

describe('usage of events and bodies', () => {
  it('reads a usage event and says whether it is usage only', () => {
    expect(usageOfEvent(usageChunk.slice(6, -2))).toEqual({ usage: { prompt_tokens: 17, completion_tokens: 4 }, usageOnly: true });
    expect(usageOfEvent('{"choices":[{"index":0}],"usage": null}')).toBeNull();
    expect(usageOfEvent('{"choices":[],"usage":{"prompt_tokens":-1,"completion_tokens":2}}')).toBeNull();
  });

  it('finds usage at the end of a whole body, nested details and a quoted "usage" in the content notwithstanding', () => {
    const chat = { id: 'x', choices: [{ message: { content: 'the "usage": {"prompt_tokens": 999} field' } }], usage: { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42, prompt_tokens_details: { cached_tokens: 3 } } };
    expect(usageOfBody(Buffer.from(JSON.stringify(chat, null, 2)))).toEqual({ prompt_tokens: 12, completion_tokens: 30 });
    const embeddings = { object: 'list', data: [{ embedding: Array.from({ length: 1000 }, (_, i) => i / 1000) }], usage: { prompt_tokens: 8, total_tokens: 8 } };
    expect(usageOfBody(Buffer.from(JSON.stringify(embeddings)))).toEqual({ prompt_tokens: 8, completion_tokens: 0 });
    expect(usageOfBody(Buffer.from('{"choices":[]}'))).toBeNull();
    expect(usageOfBody(Buffer.from('{"usage":null}'))).toBeNull();
    expect(usageOfBody(Buffer.from('{"usage":{"prompt_tokens":1'))).toBeNull();
  });

  it('reads the Responses API usage (input_tokens, output_tokens) from a whole response and from response.completed', () => {
    const response = { id: 'resp_1', object: 'response', output: [{ type: 'message', content: [{ type: 'output_text', text: 'hi' }] }], usage: { input_tokens: 7, output_tokens: 3, total_tokens: 10 } };
    expect(usageOfBody(Buffer.from(JSON.stringify(response)))).toEqual({ prompt_tokens: 7, completion_tokens: 3 });
    expect(usageOfEvent(JSON.stringify({ type: 'response.completed', sequence_number: 3, response }))).toEqual({ usage: { prompt_tokens: 7, completion_tokens: 3 }, usageOnly: false });
    expect(usageOfEvent(JSON.stringify({ type: 'response.created', response: { ...response, usage: null } }))).toBeNull();
  });
});

describe('askForUsage (USAGE_FROM_STREAMS)', () => {
  const ask = (route: string, req: Record<string, unknown>) => {
    const r = askForUsage(route, req, Buffer.from(JSON.stringify(req)));
    return { strip: r.strip, sent: JSON.parse(r.body.toString('utf8')) as Record<string, unknown> };
  };

  it('asks for usage on streams that did not, keeping their other stream options', () => {
    expect(ask('/v1/chat/completions', { model: 'm', stream: true })).toEqual({ strip: true, sent: { model: 'm', stream: true, stream_options: { include_usage: true } } });
    expect(ask('/v1/completions', { model: 'm', stream: true, stream_options: { include_usage: false, x: 1 } })).toEqual({ strip: true, sent: { model: 'm', stream: true, stream_options: { include_usage: true, x: 1 } } });
  });

  it('leaves alone clients that asked, requests that do not stream and routes without usage chunks', () => {
    expect(ask('/v1/chat/completions', { model: 'm', stream: true, stream_options: { include_usage: true } }).strip).toBe(false);
    expect(ask('/v1/chat/completions', { model: 'm' })).toEqual({ strip: false, sent: { model: 'm' } });
    expect(ask('/v1/embeddings', { model: 'm', stream: true }).strip).toBe(false);
  });
});
