import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, waitForPort } from './redis-server';

/** A Redis Cluster of the test's own: `masters` redis-servers in cluster mode on free ports, no replicas, nothing kept on disk. */
export class RedisCluster {
  private children: ChildProcess[] = [];
  private dir?: string;
  ports: number[] = [];

  constructor(private readonly masters = 3) {}

  /** A seed node, as REDIS_URL names one. */
  get url(): string {
    return `redis://127.0.0.1:${this.ports[0]}`;
  }

  async start(): Promise<this> {
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'sy-cluster-'));
    const bin = process.env.REDIS_SERVER_BIN ?? 'redis-server';
    for (let i = 0; i < this.masters; i++) {
      const port = await freePort();
      const dir = path.join(this.dir, String(port));
      spawnSync('mkdir', ['-p', dir]);
      this.ports.push(port);
      this.children.push(
        spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, 'nodes.conf'), '--save', '', '--appendonly', 'no', '--dir', dir], {
          stdio: 'ignore',
        }),
      );
    }
    await Promise.all(this.ports.map((p) => waitForPort(p)));
    const created = spawnSync('redis-cli', ['--cluster', 'create', ...this.ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], { encoding: 'utf8' });
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
    // Every node must agree before clients can rely on the slot map.
    const deadline = Date.now() + 15_000;
    for (const port of this.ports) {
      for (;;) {
        const info = spawnSync('redis-cli', ['-p', String(port), 'cluster', 'info'], { encoding: 'utf8' }).stdout;
        if (info.includes('cluster_state:ok')) break;
        if (Date.now() > deadline) throw new Error(`cluster node ${port} never reached cluster_state:ok`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    return this;
  }

  /** The port of the master that serves a key's slot: the one node that answers for it instead of redirecting (MOVED). */
  nodeOf(key: string): number {
    for (const port of this.ports) {
      const out = spawnSync('redis-cli', ['-p', String(port), 'EXISTS', key], { encoding: 'utf8' }).stdout.trim();
      if (/^\d+$/.test(out)) return port;
    }
    throw new Error(`no master answers for ${key}`);
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }),
      ),
    );
    this.children = [];
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}
