import OpenAI from 'openai';
import { parseEngineMetrics } from '@switchyard/engines';
import { loadSimConfig } from './sim-config';
import { SimServer } from './sim-server';

const fast = { TOKEN_MS: '1', TTFT_BASE_MS: '2', TOKEN_MS_PER_BATCH: '0', MAX_BATCH: '2', ANSWER_TOKENS: '5' };
let sim: SimServer;
let client: OpenAI;
let base = '';

beforeAll(async () => {
  sim = new SimServer(loadSimConfig(fast));
  await sim.listen(0, '127.0.0.1');
  base = `http://127.0.0.1:${(sim.server.address() as { port: number }).port}`;
  client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0 });
});
afterAll(() => sim.close());

const post = (path: string, body: unknown) => fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** The SSE events of a streamed answer, parsed, with the final [DONE] kept as a string. */
async function events(body: unknown): Promise<Array<Record<string, any> | string>> {
  const text = await (await post('/v1/chat/completions', body)).text();
  expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((e) => {
      expect(e.startsWith('data: ')).toBe(true);
      const data = e.slice(6);
      return data === '[DONE]' ? data : JSON.parse(data);
    });
}

const hi = [{ role: 'user' as const, content: 'hi' }];
const weather = {
  type: 'function' as const,
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['city', 'unit'] } },
};

describe('streaming as vLLM streams', () => {
  it('puts role "assistant" in the first delta', async () => {
    const [first] = await events({ model: 'sim-llama', messages: hi, stream: true });
    expect((first as any).choices[0].delta).toEqual({ role: 'assistant', content: '' });
  });

  it('sends usage in a chunk of its own with choices [] only when stream_options.include_usage asks', async () => {
    const asked = await events({ model: 'sim-llama', messages: hi, stream: true, stream_options: { include_usage: true } });
    expect(asked.at(-2)).toMatchObject({ object: 'chat.completion.chunk', choices: [], usage: { completion_tokens: 5 } });
    expect(asked.slice(0, -2).every((e) => (e as any).usage === undefined)).toBe(true);
    const notAsked = await events({ model: 'sim-llama', messages: hi, stream: true });
    expect(notAsked.some((e) => typeof e === 'object' && 'usage' in e)).toBe(false);
  });

  it('refuses stream_options without stream, naming the field', async () => {
    const res = await post('/v1/chat/completions', { model: 'sim-llama', messages: hi, stream_options: { include_usage: true } });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { type: 'invalid_request_error', param: 'stream_options', message: expect.stringMatching(/^stream_options: /) } });
  });
});

describe('finish_reason', () => {
  it('is "stop" when the answer ends by itself and "length" when max_tokens cuts it', async () => {
    const whole = await client.chat.completions.create({ model: 'sim-llama', messages: hi });
    expect(whole.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'tok tok tok tok tok' } });
    const roomy = await client.chat.completions.create({ model: 'sim-llama', messages: hi, max_tokens: 50 });
    expect(roomy.choices[0].finish_reason).toBe('stop');
    const cut = await client.chat.completions.create({ model: 'sim-llama', messages: hi, max_tokens: 2 });
    expect(cut.choices[0]).toMatchObject({ finish_reason: 'length', message: { content: 'tok tok' } });
    const stream = await client.chat.completions.stream({ model: 'sim-llama', messages: hi, max_tokens: 3 }).finalChatCompletion();
    expect(stream.choices[0]).toMatchObject({ finish_reason: 'length', message: { role: 'assistant', content: 'tok tok tok' } });
  });

  it('runs to max_tokens with ignore_eos, as vLLM does', async () => {
    const r = await post('/v1/chat/completions', { model: 'sim-llama', messages: hi, max_tokens: 8, ignore_eos: true });
    expect(((await r.json()) as any).choices[0]).toMatchObject({ finish_reason: 'length', message: { content: 'tok' + ' tok'.repeat(7) } });
  });
});

describe('n > 1', () => {
  it('gives n choices, each streamed under its own index', async () => {
    const plain = await client.chat.completions.create({ model: 'sim-llama', messages: hi, n: 3, max_tokens: 2 });
    expect(plain.choices.map((c) => [c.index, c.message.content])).toEqual([[0, 'tok tok'], [1, 'tok tok'], [2, 'tok tok']]);
    expect(plain.usage?.completion_tokens).toBe(6);
    const streamed = await client.chat.completions.stream({ model: 'sim-llama', messages: hi, n: 2 }).finalChatCompletion();
    expect(streamed.choices.map((c) => [c.index, c.finish_reason, c.message.role, c.message.content])).toEqual([
      [0, 'stop', 'assistant', 'tok tok tok tok tok'],
      [1, 'stop', 'assistant', 'tok tok tok tok tok'],
    ]);
  });

  it('refuses n = 0, naming the field', async () => {
    const res = await post('/v1/chat/completions', { model: 'sim-llama', messages: hi, n: 0 });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.param).toBe('n');
  });
});

describe('tools', () => {
  it('calls the function tool_choice names, with arguments for its required parameters', async () => {
    const r = await client.chat.completions.create({ model: 'sim-llama', messages: hi, tools: [weather], tool_choice: { type: 'function', function: { name: 'get_weather' } } });
    expect(r.choices[0].finish_reason).toBe('tool_calls');
    expect(r.choices[0].message.content).toBeNull();
    const call = r.choices[0].message.tool_calls?.[0];
    expect(call).toMatchObject({ type: 'function', function: { name: 'get_weather' } });
    expect(JSON.parse((call as { function: { arguments: string } }).function.arguments)).toEqual({ city: 'sim', unit: 'celsius' });
  });

  it('streams a tool call the openai client assembles, when the prompt asks for the tool', async () => {
    const done = await client.chat.completions
      .stream({ model: 'sim-llama', messages: [{ role: 'user', content: 'call get_weather for Paris' }], tools: [weather] })
      .finalChatCompletion();
    expect(done.choices[0].finish_reason).toBe('tool_calls');
    const call = done.choices[0].message.tool_calls?.[0] as { id: string; function: { name: string; arguments: string } };
    expect(call.id).toMatch(/^chatcmpl-tool-/);
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'sim', unit: 'celsius' });
  });

  it('answers in text when the prompt does not ask for a tool or tool_choice is "none"', async () => {
    const auto = await client.chat.completions.create({ model: 'sim-llama', messages: hi, tools: [weather] });
    expect(auto.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'tok tok tok tok tok' } });
    const none = await client.chat.completions.create({ model: 'sim-llama', messages: [{ role: 'user', content: 'get_weather' }], tools: [weather], tool_choice: 'none' });
    expect(none.choices[0].finish_reason).toBe('stop');
  });

  it('refuses a tool_choice naming a function not in tools, naming the field', async () => {
    const res = await post('/v1/chat/completions', { model: 'sim-llama', messages: hi, tools: [weather], tool_choice: { type: 'function', function: { name: 'nope' } } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toMatchObject({ param: 'tool_choice', message: expect.stringContaining('nope') });
  });
});

describe('embeddings', () => {
  it('embeds several inputs, each under its index, the same in float and in base64 (float32 little-endian)', async () => {
    const floats = await client.embeddings.create({ model: 'sim-llama', input: ['alpha', 'beta'], encoding_format: 'float' });
    expect(floats.data.map((d) => d.index)).toEqual([0, 1]);
    expect(floats.data[0].embedding).toHaveLength(8);
    expect(floats.data[0].embedding).not.toEqual(floats.data[1].embedding);
    const raw = (await (await post('/v1/embeddings', { model: 'sim-llama', input: ['alpha', 'beta'], encoding_format: 'base64' })).json()) as { data: Array<{ embedding: string }> };
    const decoded = raw.data.map((d) => {
      const buf = Buffer.from(d.embedding, 'base64');
      return Array.from({ length: buf.length / 4 }, (_, i) => buf.readFloatLE(i * 4));
    });
    expect(decoded).toEqual(floats.data.map((d) => d.embedding));
    // The openai client asks for base64 by default and decodes it itself.
    const viaClient = await client.embeddings.create({ model: 'sim-llama', input: ['alpha', 'beta'] });
    expect(viaClient.data.map((d) => d.embedding)).toEqual(decoded);
  });

  it('refuses an unknown encoding_format and an empty input, naming the field', async () => {
    for (const [body, param] of [
      [{ model: 'sim-llama', input: 'x', encoding_format: 'hex' }, 'encoding_format'],
      [{ model: 'sim-llama', input: [] }, 'input'],
    ] as const) {
      const res = await post('/v1/embeddings', body);
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error.param).toBe(param);
    }
  });
});

describe('/health and /metrics as vLLM serves them', () => {
  it('answers /health 200 with an empty body', async () => {
    const res = await fetch(`${base}/health`);
    expect([res.status, await res.text()]).toEqual([200, '']);
  });

  it('reports its own batcher on /metrics: running, waiting and KV usage for its model', async () => {
    const read = async () => parseEngineMetrics(await (await fetch(`${base}/metrics`)).text(), ['sim-llama']);
    expect(await read()).toEqual({ engine: 'vllm', running: 0, waiting: 0, kv_cache_usage: 0 });
    const busy = Array.from({ length: 3 }, () => post('/v1/completions', { model: 'sim-llama', prompt: 'x'.repeat(400), max_tokens: 2000, ignore_eos: true }).catch(() => undefined));
    const deadline = Date.now() + 3000;
    let seen = await read();
    while ((seen.running !== 2 || seen.waiting !== 1) && Date.now() < deadline) seen = await read();
    expect(seen).toMatchObject({ running: 2, waiting: 1 });
    expect(seen.kv_cache_usage).toBeGreaterThan(0);
    await sim.close();
    await Promise.all(busy);
  });
});
