import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** A free TCP port on 127.0.0.1, as the kernel hands it out. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const sock = net.connect(port, '127.0.0.1');
      sock.once('connect', () => {
        sock.destroy();
        resolve();
      });
      sock.once('error', () => {
        sock.destroy();
        if (Date.now() > deadline) reject(new Error(`port ${port} did not open within ${timeoutMs} ms`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

/** A redis-server of the test's own, on a free port, with nothing kept on disk. */
export class RedisServer {
  private child?: ChildProcess;
  private dir?: string;
  port = 0;

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(port?: number): Promise<this> {
    this.port = port ?? this.port ?? 0;
    if (!this.port) this.port = await freePort();
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'sy-redis-'));
    const bin = process.env.REDIS_SERVER_BIN ?? 'redis-server';
    this.child = spawn(bin, ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir], {
      stdio: 'ignore',
    });
    const failed = new Promise<never>((_, reject) => {
      this.child?.once('error', (err) => reject(new Error(`cannot start ${bin}: ${err.message} (install redis-server)`)));
    });
    await Promise.race([waitForPort(this.port), failed]);
    return this;
  }

  /** Freezes the server (SIGSTOP), as a hung host or a long GC-like stall does: connections stay open, nothing is answered. */
  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  /** Lets a paused server run again (SIGCONT); it then serves what queued up meanwhile. */
  resume(): void {
    this.child?.kill('SIGCONT');
  }

  /** Stops the server; start() again brings up an empty one on the same port, as a Redis restart without persistence does. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null) {
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      });
    }
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}
