import OpenAI from 'openai';
import { freePort, RedisServer, waitFor } from '@switchyard/testing';
import { FakeEngine, startFakeEngine } from './fake-engines';
import { AppProcess } from './processes';

jest.setTimeout(120_000);

/**
 * Stickiness across proxies: a Responses API follow-up (previous_response_id) lands on the
 * instance that made the response, whichever proxy each call goes through, because the
 * response id is bound to that instance in Redis; an x-session-id does the same for chat
 * with SESSION_AFFINITY=true. The fake vLLMs keep responses in their own memory only, as
 * vLLM does, and answer 404 for a response they did not make.
 */
const TOKEN = 'affinity-e2e';
const MODEL = 'sticky-model';
const redis = new RedisServer();
const engines: FakeEngine[] = [];
const proxies: AppProcess[] = [];
let cp: AppProcess;
let cpUrl = '';
const clients: OpenAI[] = [];

async function admin(method: string, path: string, body?: unknown) {
  const res = await fetch(cpUrl + path, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return res.status;
}

beforeAll(async () => {
  await redis.start();
  const cpPort = await freePort();
  cp = await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: redis.url, ADMIN_TOKEN: TOKEN, PROBE_INTERVAL_S: '0.5' }).start(cpPort);
  cpUrl = `http://127.0.0.1:${cpPort}`;
  for (let i = 0; i < 3; i++) {
    const e = await startFakeEngine('vllm', { model: MODEL });
    engines.push(e);
    expect(await admin('POST', '/v1/instances', { instance_id: `e${i}`, url: e.url, models: [MODEL] })).toBe(200);
  }
  for (const name of ['a', 'b']) {
    const port = await freePort();
    proxies.push(await new AppProcess('apps/proxy/src/main.ts', { REDIS_URL: redis.url, PROXY_NAME: name, REGISTRY_RESYNC_S: '0.5', SESSION_AFFINITY: 'true', MAX_RETRIES: '0' }).start(port));
    clients.push(new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'unused', maxRetries: 0 }));
  }
});

afterAll(async () => {
  await Promise.all(proxies.map((p) => p.stop()));
  await cp?.stop();
  await Promise.all(engines.map((e) => e.close()));
  await redis.stop();
});

/** One Responses API call through a proxy: the response id and the instance that served it. */
async function respond(client: OpenAI, previous: string | undefined, stream: boolean): Promise<{ id: string; instance: string | null }> {
  const params = { model: MODEL, input: 'go on', ...(previous ? { previous_response_id: previous } : {}) };
  if (!stream) {
    const { data, response } = await client.responses.create(params).withResponse();
    return { id: data.id, instance: response.headers.get('x-switchyard-instance') };
  }
  const { data, response } = await client.responses.create({ ...params, stream: true }).withResponse();
  let id = '';
  for await (const event of data) if (event.type === 'response.completed') id = event.response.id;
  return { id, instance: response.headers.get('x-switchyard-instance') };
}

describe('previous_response_id across proxies', () => {
  it('sends 20 follow-ups through both proxies, streamed or not, to the instance that made the first response', async () => {
    const first = await respond(clients[0], undefined, false);
    expect(first.instance).toMatch(/^e[012]$/);
    let last = first.id;
    const served: (string | null)[] = [];
    for (let i = 0; i < 20; i++) {
      // An unrelated request between follow-ups: with 3 idle instances least_load's tie ticket moves by 2 per round, never back to the same one twice.
      await respond(clients[i % 2], undefined, false);
      const next = await respond(clients[(i + 1) % 2], last, i % 3 === 2);
      served.push(next.instance);
      last = next.id;
    }
    expect(served).toEqual(Array(20).fill(first.instance));
    // The engine that made the first response made the whole chain.
    const maker = engines[Number(first.instance?.slice(1))];
    expect(maker.responses.has(last)).toBe(true);
  });

  it('falls back to the strategy, with a log line, when the bound instance is gone', async () => {
    const first = await respond(clients[0], undefined, false);
    expect(await admin('DELETE', `/v1/instances/${first.instance}`)).toBe(200);
    // Both proxies hear of the removal within a resync.
    const err = await waitFor(async () => {
      try {
        await respond(clients[1], first.id, false);
        return false;
      } catch (e) {
        // Another vLLM does not know the response: its own 404 comes back through the proxy.
        return (e as { status?: number }).status === 404;
      }
    }, 5000);
    expect(err).toBe(true);
    expect(proxies[1].output).toContain('affinity: the bound instance cannot serve now');
    expect(await admin('POST', '/v1/instances', { instance_id: first.instance, url: engines[Number(first.instance?.slice(1))].url, models: [MODEL] })).toBe(200);
  });
});

describe('x-session-id with SESSION_AFFINITY=true', () => {
  it('keeps each session on one instance through both proxies, while sessions spread over the fleet', async () => {
    const where = new Map<string, Set<string | null>>();
    for (let round = 0; round < 4; round++) {
      // Five sessions a round over three idle instances: without affinity a session would move every round.
      for (const session of ['s1', 's2', 's3', 's4', 's5']) {
        const { response } = await clients[round % 2].chat.completions
          .create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'x-session-id': session } })
          .withResponse();
        const seen = where.get(session) ?? new Set();
        seen.add(response.headers.get('x-switchyard-instance'));
        where.set(session, seen);
      }
    }
    for (const seen of where.values()) expect(seen.size).toBe(1);
    const used = new Set([...where.values()].flatMap((s) => [...s]));
    expect(used.size).toBeGreaterThan(1);
  });
});
