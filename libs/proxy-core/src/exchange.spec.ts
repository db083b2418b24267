import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { waitFor } from '@switchyard/testing';
import { Exchange, Exchanges, Slot } from './exchange';

/** A slot as the ledger hands it out, noting each release and whether the exchange's upstream call was aborted by then. */
function slotFor(ex: () => Exchange, log: string[]): Slot {
  return { instanceId: 'i', url: 'http://127.0.0.1:1', release: () => void log.push(`release aborted=${ex().signal.aborted}`) };
}

describe('Exchange and Exchanges', () => {
  let server: http.Server;
  let port = 0;
  const exchanges = new Exchanges();
  const ended: Exchange[] = [];
  let onRequest: (ex: Exchange) => void = () => undefined;

  beforeAll(async () => {
    server = http.createServer((req, res) => onRequest(exchanges.begin(req, res, (ex) => void ended.push(ex))));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => {
    ended.length = 0;
  });

  /** Writes raw bytes on a fresh connection and destroys it once `bytes` have come back (0: at once). */
  const sendAndLeave = (raw: string, bytes: number) =>
    new Promise<void>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.write(raw);
        if (bytes === 0) setTimeout(() => (socket.destroy(), resolve()), 50);
      });
      let got = 0;
      socket.on('data', (d) => {
        got += d.length;
        if (bytes > 0 && got >= bytes) {
          socket.destroy();
          resolve();
        }
      });
    });
  const get = (path: string) => `GET ${path} HTTP/1.1\r\nhost: x\r\n\r\n`;

  it('client gone: the end handler aborts the upstream call first, then releases the slot, once; status 499, not complete', async () => {
    const log: string[] = [];
    onRequest = (ex) => {
      void ex.signal;
      ex.hold(slotFor(() => ex, log));
    };
    await sendAndLeave(get('/'), 0);
    expect(await waitFor(() => ended.length === 1, 1000, 5)).toBe(true);
    ended[0].end();
    expect(log).toEqual(['release aborted=true']);
    expect([ended[0].status, ended[0].complete]).toEqual([499, false]);
    expect(exchanges.open).toBe(0);
  });

  it('a slot taken after the exchange ended goes back at once', async () => {
    const log: string[] = [];
    let last: Exchange | undefined;
    onRequest = (ex) => (last = ex);
    await sendAndLeave(get('/'), 0);
    expect(await waitFor(() => ended.length === 1, 1000, 5)).toBe(true);
    last!.hold(slotFor(() => last!, log));
    expect(log).toEqual(['release aborted=true']);
  });

  it('pipelined: a response queued behind another ends with the socket, and its turn never comes', async () => {
    const turns: (boolean | Promise<boolean>)[] = [];
    const held: Exchange[] = [];
    onRequest = (ex) => {
      held.push(ex);
      turns.push(ex.turn());
      // The first answer starts and never ends; the second waits behind it.
      if (held.length === 1) ex.res.writeHead(200, { 'content-type': 'text/event-stream' }).write('data: 1\n\n');
    };
    await sendAndLeave(get('/a') + get('/b'), 20);
    expect(await waitFor(() => held.length === 2 && exchanges.open === 0, 1000, 5)).toBe(true);
    expect(turns[0]).toBe(true);
    expect(await turns[1]).toBe(false);
    expect(ended.map((e) => e.req.url).sort()).toEqual(['/a', '/b']);
  });
});
