import OpenAI from 'openai';
import { parseEngineMetrics } from '@switchyard/engines';
import { startFakeEngine, type FakeEngine, type FakeEngineKind } from './fake-engines';

const KINDS: FakeEngineKind[] = ['vllm', 'sglang', 'llamacpp'];

describe.each(KINDS)('fake %s engine', (kind) => {
  let engine: FakeEngine;
  let client: OpenAI;
  beforeAll(async () => {
    engine = await startFakeEngine(kind, { model: 'org/model-7b' });
    client = new OpenAI({ baseURL: `${engine.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(() => engine.close());

  it('serves the running, waiting and KV usage it was given on /metrics, in its own names', async () => {
    Object.assign(engine, { running: 4, waiting: 6, kv: 0.35 });
    const text = await (await fetch(`${engine.url}/metrics`)).text();
    expect(parseEngineMetrics(text, ['org/model-7b'])).toEqual({ engine: kind, running: 4, waiting: 6, kv_cache_usage: 0.35 });
  });

  it('answers /health 200 while healthy and as the engine does when not', async () => {
    engine.healthy = true;
    expect((await fetch(`${engine.url}/health`)).status).toBe(200);
    engine.healthy = false;
    const res = await fetch(`${engine.url}/health`);
    expect(res.status).toBe(503);
    if (kind === 'llamacpp') expect(await res.json()).toEqual({ error: { code: 503, message: 'Loading model', type: 'unavailable_error' } });
    engine.healthy = true;
  });

  it('lists its model and streams a chat completion the official client assembles', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => [m.id, m.owned_by])).toEqual([['org/model-7b', kind]]);
    const before = engine.received;
    const done = await client.chat.completions.stream({ model: 'org/model-7b', messages: [{ role: 'user', content: 'hi' }] }).finalChatCompletion();
    expect(done.choices[0]).toMatchObject({ finish_reason: 'stop', message: { role: 'assistant', content: `Hello from ${kind}` } });
    const cut = await client.chat.completions.create({ model: 'org/model-7b', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 });
    expect(cut.choices[0]).toMatchObject({ finish_reason: 'length', message: { content: 'Hello' } });
    expect(engine.received).toBe(before + 2);
  });
});

it('fake vLLM lists max_model_len, as vLLM does', async () => {
  const engine = await startFakeEngine('vllm', { model: 'm' });
  try {
    const body = (await (await fetch(`${engine.url}/v1/models`)).json()) as { data: Array<Record<string, unknown>> };
    expect(body.data[0]).toMatchObject({ id: 'm', owned_by: 'vllm', max_model_len: 8192 });
  } finally {
    await engine.close();
  }
});
