/**
 * What the image's `--max-semi-space-size=4` costs: the built proxy (`node dist/apps/proxy/src/main.js`)
 * with node's default young generation against the image's setting, on the overhead benchmark's
 * fast upstream, with wrk (1 thread, 32 connections, non-streaming JSON). The two alternate, two
 * rounds each, in one run; RSS after each round. Run: `npm run build && node -r @swc-node/register
 * tools/bench/src/semi-space.ts` (about 1 minute; needs wrk and redis-server).
 */
import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, RedisServer, waitFor, waitForPort } from '@switchyard/testing';
import { registerInRedis } from './fleet';
import { runWrk } from './wrk';

const ROOT = path.resolve(__dirname, '../../..');
const VARIANTS = [
  { label: 'node defaults', nodeOptions: '' },
  { label: '--max-semi-space-size=4 (the image)', nodeOptions: '--max-semi-space-size=4' },
];
const ROUNDS = 2;
const SECONDS = 10;

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

async function stop(child: ChildProcess, signal: NodeJS.Signals = 'SIGINT'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill(signal);
  await gone;
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sy-semi-space-'));
  const redis = await new RedisServer().start();
  const upstreamPort = await freePort();
  const upstream = spawn(process.execPath, ['-r', '@swc-node/register', 'tools/bench/src/fast-upstream.ts'], { cwd: ROOT, env: { ...process.env, PORTS: String(upstreamPort) }, stdio: 'ignore' });
  try {
    await waitForPort(upstreamPort, 30_000);
    await registerInRedis(redis.url, [{ instance_id: 'fast', url: `http://127.0.0.1:${upstreamPort}`, models: ['bench-model'] }]);
    const body = JSON.stringify({ model: 'bench-model', messages: [{ role: 'user', content: 'hi' }] });
    const results = VARIANTS.map(() => ({ rps: [] as number[], rss: [] as number[] }));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, v] of VARIANTS.entries()) {
        const port = await freePort();
        const proxy = spawn(process.execPath, ['dist/apps/proxy/src/main.js'], {
          cwd: ROOT,
          env: { PATH: process.env.PATH ?? '', PORT: String(port), REDIS_URL: redis.url, LOG_LEVEL: 'warn', DRAIN_SETTLE_S: '0', NODE_OPTIONS: v.nodeOptions },
          stdio: 'ignore',
        });
        try {
          const url = `http://127.0.0.1:${port}`;
          if (!(await waitFor(async () => (await fetch(`${url}/readyz`)).ok, 30_000, 100))) throw new Error(`proxy (${v.label}) never became ready`);
          await runWrk({ url: `${url}/v1/chat/completions`, body, connections: 32, durationS: 3, dir });
          const r = await runWrk({ url: `${url}/v1/chat/completions`, body, connections: 32, durationS: SECONDS, dir });
          if (r.errors) throw new Error(`${v.label}: ${r.errors} wrk errors`);
          results[i].rps.push(r.rps);
          results[i].rss.push(rssMb(proxy.pid ?? -1));
        } finally {
          await stop(proxy);
        }
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log(`| built proxy | req/s per round | mean req/s | RSS after each round |\n|---|---|---|---|`);
    for (const [i, v] of VARIANTS.entries()) {
      const r = results[i];
      console.log(`| ${v.label} | ${r.rps.map((x) => Math.round(x).toLocaleString('en')).join(', ')} | ${Math.round(mean(r.rps)).toLocaleString('en')} | ${r.rss.map((x) => `${x.toFixed(1)} MB`).join(', ')} |`);
    }
    console.log(`\nsemi-space 4 / defaults: ${(mean(results[1].rps) / mean(results[0].rps)).toFixed(3)}x req/s`);
  } finally {
    await stop(upstream, 'SIGTERM');
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
