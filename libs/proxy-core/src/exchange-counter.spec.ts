import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ExchangeCounter } from './exchange-counter';

describe('ExchangeCounter', () => {
  let server: http.Server;
  let base = '';
  const counter = new ExchangeCounter();
  const pending: (() => void)[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      counter.track(res);
      if (req.url === '/stream') {
        // The handler returns at once; the body goes on being written afterwards.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: 1\n\n');
        pending.push(() => res.write('data: 2\n\n'), () => res.end('data: [DONE]\n\n'));
        return;
      }
      res.end(req.url === '/missing' ? 'no' : 'ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const settled = async (n: number) => {
    for (let i = 0; i < 100 && counter.open !== n; i++) await new Promise((r) => setTimeout(r, 10));
    return counter.open;
  };

  it('gives the exchange back when a plain body ends', async () => {
    await (await fetch(`${base}/ok`)).text();
    expect(await settled(0)).toBe(0);
  });

  it('counts a streaming body until its last chunk, not until its handler returned', async () => {
    const res = await fetch(`${base}/stream`);
    const reader = res.body!.getReader();
    await reader.read();
    expect(counter.open).toBe(1);
    pending.shift()!();
    await reader.read();
    expect(counter.open).toBe(1);
    pending.shift()!();
    while (!(await reader.read()).done);
    expect(await settled(0)).toBe(0);
  });

  it('gives back an exchange whose client abandoned the body', async () => {
    const ac = new AbortController();
    const res = await fetch(`${base}/stream`, { signal: ac.signal });
    await res.body!.getReader().read();
    expect(counter.open).toBe(1);
    ac.abort();
    expect(await settled(0)).toBe(0);
    pending.length = 0;
  });

  it('returns to 0 after many exchanges on other routes', async () => {
    await Promise.all(Array.from({ length: 20 }, (_, i) => fetch(`${base}/${i % 2 ? 'missing' : 'ok'}`).then((r) => r.text())));
    expect(await settled(0)).toBe(0);
  });
});
