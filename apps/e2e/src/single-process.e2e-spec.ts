import OpenAI from 'openai';
import net from 'node:net';
import { freePort } from '@switchyard/testing';
import { AppProcess } from './processes';

jest.setTimeout(60_000);

it('npm start brings up a gateway on the memory store with two simulated instances that answers a chat completion', async () => {
  const port = await freePort();
  const cpPort = await freePort();
  // The two sims take SIM_BASE_PORT and the port after it: both must be free.
  let simBase = await freePort();
  while (!(await isFree(simBase + 1))) simBase = await freePort();
  const env: Record<string, string> = { CONTROL_PLANE_PORT: String(cpPort), SIM_BASE_PORT: String(simBase), REDIS_URL: '' };
  const gw = await new AppProcess('apps/control-plane/src/single-process.ts', env).start(port);
  try {
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'unused', maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: 'sim-llama', messages: [{ role: 'user', content: 'hello' }], stream: true });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
    expect(text.startsWith('tok')).toBe(true);
    expect(gw.output).toContain('started 2 simulated instances');
    expect(gw.output).toContain('in-memory');
    const listed = (await (await fetch(`http://127.0.0.1:${cpPort}/v1/instances`)).json()) as { instances: { instance_id: string; load: { inflight: number } }[] };
    expect(listed.instances.map((i) => i.instance_id)).toEqual(['sim-1', 'sim-2']);
    expect(listed.instances.every((i) => i.load.inflight === 0)).toBe(true);
  } finally {
    await gw.stop();
  }
});

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}
