import net from 'node:net';
import Redis from 'ioredis';
import { freePort, RedisServer } from './redis-server';

describe('RedisServer', () => {
  it('starts a private redis-server on a free port and stops it', async () => {
    const server = await new RedisServer().start();
    const client = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    client.on('error', () => undefined);
    await client.connect();
    expect(await client.ping()).toBe('PONG');
    client.disconnect();
    await server.stop();
    await expect(
      new Promise((resolve, reject) => {
        const s = net.connect(server.port, '127.0.0.1');
        s.once('connect', () => resolve(s.destroy()));
        s.once('error', reject);
      }),
    ).rejects.toThrow();
  });

  it('hands out a usable free port', async () => {
    const port = await freePort();
    expect(port).toBeGreaterThan(0);
  });
});
