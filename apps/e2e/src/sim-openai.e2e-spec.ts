import OpenAI from 'openai';
import { freePort, RedisServer, sleep, waitFor } from '@switchyard/testing';
import { AppProcess } from './processes';

jest.setTimeout(90_000);

// Control plane, proxy and two sims as real processes, the sims started before the control plane.
const redis = new RedisServer();
const procs: AppProcess[] = [];
let sim: AppProcess;
let probeOnly: AppProcess;
let cpUrl = '';
let proxyUrl = '';
let client: OpenAI;

type Inst = { instance_id: string; is_alive: boolean; meta: Record<string, unknown> };
const instances = async (): Promise<Inst[]> => ((await (await fetch(`${cpUrl}/v1/instances`)).json()) as { instances: Inst[] }).instances;

beforeAll(async () => {
  await redis.start();
  const cpPort = await freePort();
  cpUrl = `http://127.0.0.1:${cpPort}`;
  const simEnv = { CONTROL_PLANE_URL: cpUrl, TOKEN_MS: '2', TTFT_BASE_MS: '5', ANSWER_TOKENS: '6', REGISTER_RETRY_MAX_S: '0.5' };
  sim = await new AppProcess('apps/sim-instance/src/main.ts', { ...simEnv, INSTANCE_ID: 'sim-a' }).start(await freePort());
  probeOnly = await new AppProcess('apps/sim-instance/src/main.ts', { ...simEnv, INSTANCE_ID: 'sim-probe', MODEL: 'sim-probe', SIM_HEARTBEAT: 'false' }).start(await freePort());
  procs.push(sim, probeOnly);
  await sleep(700);
  procs.push(await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: redis.url }).start(cpPort));
  const proxyPort = await freePort();
  procs.push(await new AppProcess('apps/proxy/src/main.ts', { REDIS_URL: redis.url }).start(proxyPort));
  proxyUrl = `http://127.0.0.1:${proxyPort}`;
  client = new OpenAI({ baseURL: `${proxyUrl}/v1`, apiKey: 'unused', maxRetries: 0 });
  expect(await waitFor(async () => (await instances()).filter((i) => i.is_alive).length === 2)).toBe(true);
  expect(await waitFor(async () => (await client.models.list()).data.some((m) => m.id === 'sim-llama'))).toBe(true);
});

afterAll(async () => {
  for (const p of procs.reverse()) await p.stop();
  await redis.stop();
});

const hi = [{ role: 'user' as const, content: 'hi' }];

it('sims started before the control plane retry their registration instead of exiting; SIM_HEARTBEAT=false registers too', async () => {
  expect(sim.output).toMatch(/retrying registration/);
  expect(sim.output).toMatch(/registered as sim-a \(heartbeat every/);
  expect(probeOnly.output).toMatch(/registered as sim-probe \(no heartbeats/);
  const byId = Object.fromEntries((await instances()).map((i) => [i.instance_id, i]));
  expect(byId['sim-probe'].meta).toMatchObject({ sim: true, heartbeat: false });
});

describe('the official openai client against the sim through the proxy', () => {
  it('chat.completions.stream(...).finalChatCompletion() assembles the answer', async () => {
    const done = await client.chat.completions.stream({ model: 'sim-llama', messages: hi }).finalChatCompletion();
    expect(done.choices).toHaveLength(1);
    expect(done.choices[0]).toMatchObject({ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'tok tok tok tok tok tok' } });
    const cut = await client.chat.completions.stream({ model: 'sim-llama', messages: hi, max_tokens: 2 }).finalChatCompletion();
    expect(cut.choices[0]).toMatchObject({ finish_reason: 'length', message: { content: 'tok tok' } });
  });

  it('tools: a named tool_choice and a prompt asking for the tool both give a tool call', async () => {
    const tools = [{ type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } } }];
    const named = await client.chat.completions.create({ model: 'sim-llama', messages: hi, tools, tool_choice: { type: 'function', function: { name: 'lookup' } } });
    expect(named.choices[0].finish_reason).toBe('tool_calls');
    expect(named.choices[0].message.tool_calls?.[0]).toMatchObject({ type: 'function', function: { name: 'lookup', arguments: '{"q":"sim"}' } });
    const streamed = await client.chat.completions.stream({ model: 'sim-llama', messages: [{ role: 'user', content: 'please lookup switchyards' }], tools }).finalChatCompletion();
    expect(streamed.choices[0].finish_reason).toBe('tool_calls');
    expect(streamed.choices[0].message.tool_calls?.[0]).toMatchObject({ function: { name: 'lookup', arguments: '{"q":"sim"}' } });
  });

  it('n=2 gives two choices, streamed and not', async () => {
    const plain = await client.chat.completions.create({ model: 'sim-llama', messages: hi, n: 2, max_tokens: 3 });
    expect(plain.choices.map((c) => [c.index, c.message.content, c.finish_reason])).toEqual([[0, 'tok tok tok', 'length'], [1, 'tok tok tok', 'length']]);
    const streamed = await client.chat.completions.stream({ model: 'sim-llama', messages: hi, n: 2 }).finalChatCompletion();
    expect(streamed.choices.map((c) => [c.index, c.message.content, c.finish_reason])).toEqual([[0, 'tok tok tok tok tok tok', 'stop'], [1, 'tok tok tok tok tok tok', 'stop']]);
  });

  it('embeddings with two inputs, as floats and as base64 float32', async () => {
    const floats = await client.embeddings.create({ model: 'sim-llama', input: ['first', 'second'], encoding_format: 'float' });
    expect(floats.data.map((d) => [d.index, d.embedding.length])).toEqual([[0, 8], [1, 8]]);
    const b64 = await client.embeddings.create({ model: 'sim-llama', input: ['first', 'second'], encoding_format: 'base64' });
    const decoded = b64.data.map((d) => {
      const buf = Buffer.from(d.embedding as unknown as string, 'base64');
      return Array.from({ length: buf.length / 4 }, (_, i) => buf.readFloatLE(i * 4));
    });
    expect(decoded).toEqual(floats.data.map((d) => d.embedding));
    expect(floats.usage.prompt_tokens).toBe(4);
  });

  it('the usage chunk (choices: []) arrives when stream_options.include_usage asks, and not otherwise', async () => {
    const chunks = async (includeUsage: boolean) => {
      const stream = await client.chat.completions.create({ model: 'sim-llama', messages: hi, stream: true, ...(includeUsage ? { stream_options: { include_usage: true } } : {}) });
      const all = [];
      for await (const c of stream) all.push(c);
      return all;
    };
    const asked = await chunks(true);
    expect(asked.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: expect.any(Number), completion_tokens: 6, total_tokens: expect.any(Number) } });
    expect(asked.filter((c) => c.usage)).toHaveLength(1);
    expect(asked[0].choices[0].delta.role).toBe('assistant');
    const notAsked = await chunks(false);
    expect(notAsked.some((c) => c.usage)).toBe(false);
    expect(notAsked.at(-1)?.choices[0].finish_reason).toBe('stop');
  });
});
