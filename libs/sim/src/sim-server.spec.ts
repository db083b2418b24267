import OpenAI from 'openai';
import http from 'node:http';
import { loadSimConfig } from './sim-config';
import { SimServer } from './sim-server';
import { Batcher } from './batcher';

const fast = { TOKEN_MS: '2', TTFT_BASE_MS: '5', TOKEN_MS_PER_BATCH: '1', MAX_BATCH: '2' };
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

const waitFor = async (cond: () => boolean, ms = 3000) => {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  return cond();
};

describe('SimServer with the openai client', () => {
  it('answers a chat completion with usage', async () => {
    const r = await client.chat.completions.create({ model: 'sim-llama', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
    expect(r.choices[0].message.content).toBe('tok tok tok');
    expect(r.usage?.completion_tokens).toBe(3);
  });

  it('streams a chat completion token by token, with usage at the end', async () => {
    const stream = await client.chat.completions.create({
      model: 'sim-llama',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 4,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: unknown;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('tok tok tok tok');
    expect(usage).toMatchObject({ completion_tokens: 4 });
  });

  it('serves completions, embeddings and models', async () => {
    expect((await client.completions.create({ model: 'sim-llama', prompt: 'x', max_tokens: 2 })).choices[0].text).toBe('tok tok');
    expect((await client.embeddings.create({ model: 'sim-llama', input: 'x' })).data[0].embedding.length).toBeGreaterThan(0);
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['sim-llama']);
  });

  it('batches at most MAX_BATCH at once and queues the rest', async () => {
    const all = Promise.all(Array.from({ length: 5 }, () => client.completions.create({ model: 'sim-llama', prompt: 'x', max_tokens: 20 })));
    expect(await waitFor(() => sim.stats().queued === 3)).toBe(true);
    expect(sim.stats().running).toBe(2);
    await all;
    expect(sim.stats()).toMatchObject({ running: 0, queued: 0 });
  });

  it('counts a client that disconnects mid-stream and frees its slot', async () => {
    const before = sim.stats().disconnects;
    await new Promise<void>((resolve) => {
      const req = http.request(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.end(JSON.stringify({ model: 'sim-llama', messages: [], max_tokens: 500, stream: true }));
    });
    expect(await waitFor(() => sim.stats().disconnects === before + 1)).toBe(true);
    expect(await waitFor(() => sim.stats().running === 0)).toBe(true);
  });

  it('rejects malformed JSON with an OpenAI error body', async () => {
    const res = await fetch(`${base}/v1/chat/completions`, { method: 'POST', body: '{nope' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/JSON/);
  });
});

describe('Batcher', () => {
  it('hands a freed slot to the next waiter and lets an aborted waiter leave', async () => {
    const b = new Batcher(1);
    const first = await b.admit(new AbortController().signal);
    const ac = new AbortController();
    const leaving = b.admit(ac.signal);
    const staying = b.admit(new AbortController().signal);
    expect(b.queued).toBe(2);
    ac.abort();
    await expect(leaving).rejects.toThrow();
    expect(b.queued).toBe(1);
    first();
    first();
    const second = await staying;
    expect(b.running).toBe(1);
    second();
    expect(b.running).toBe(0);
  });
});
