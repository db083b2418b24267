/**
 * Memory of one proxy after 1,000 requests: the built JavaScript the image runs
 * (`node dist/apps/proxy/src/main.js`) against the TypeScript register hook of `npm run start:proxy`.
 * Run: `npm run build && node -r @swc-node/register tools/bench/src/rss.ts` (about 30 s);
 * PROXY_NODE_OPTIONS passes node flags to both proxies (e.g. `--max-semi-space-size=4`), and
 * MALLOC_ARENA_MAX, when set, is passed on to them.
 * Both proxies run in one go on the same Redis, control plane and sim, one after the other.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { freePort, RedisServer, waitFor } from '@switchyard/testing';

const ROOT = path.resolve(__dirname, '../../..');
const REQUESTS = 1000;
const CONCURRENCY = 10;

function start(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, args, { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: 'ignore' });
}

function rssMb(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return Math.round((kb / 1024) * 10) / 10;
}

async function until(url: string, ok: (body: string) => boolean): Promise<void> {
  if (!(await waitFor(async () => ok(await (await fetch(url)).text()), 30_000, 100))) throw new Error(`${url} never became ready`);
}

async function measure(label: string, args: string[], redisUrl: string): Promise<{ label: string; startedMb: number; afterMb: number; ms: number }> {
  const port = await freePort();
  const proxy = start(args, { REDIS_URL: redisUrl, PORT: String(port), LOG_LEVEL: 'warn', DRAIN_SETTLE_S: '0', NODE_OPTIONS: process.env.PROXY_NODE_OPTIONS ?? '', ...(process.env.MALLOC_ARENA_MAX ? { MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX } : {}) });
  try {
    const url = `http://127.0.0.1:${port}`;
    await until(`${url}/v1/models`, (b) => b.includes('sim-llama'));
    const startedMb = rssMb(proxy.pid ?? -1);
    let next = 0;
    const t0 = Date.now();
    const body = JSON.stringify({ model: 'sim-llama', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next++ < REQUESTS) {
          const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
          if (!res.ok) throw new Error(`${label}: ${res.status} ${await res.text()}`);
          await res.arrayBuffer();
        }
      }),
    );
    return { label, startedMb, afterMb: rssMb(proxy.pid ?? -1), ms: Date.now() - t0 };
  } finally {
    const gone = new Promise((r) => proxy.once('exit', r));
    proxy.kill('SIGINT');
    await gone;
  }
}

async function main() {
  const redis = await new RedisServer().start();
  const cpPort = await freePort();
  const simPort = await freePort();
  const cp = start(['dist/apps/control-plane/src/main.js'], { REDIS_URL: redis.url, PORT: String(cpPort), LOG_LEVEL: 'warn' });
  const sim = start(['dist/apps/sim-instance/src/main.js'], { PORT: String(simPort), CONTROL_PLANE_URL: `http://127.0.0.1:${cpPort}`, TOKEN_MS: '1', TTFT_BASE_MS: '1', MAX_BATCH: '64' });
  try {
    await until(`http://127.0.0.1:${cpPort}/v1/instances`, (b) => b.includes('sim-llama'));
    const results = [
      await measure('node dist/apps/proxy/src/main.js', ['dist/apps/proxy/src/main.js'], redis.url),
      await measure('node -r @swc-node/register apps/proxy/src/main.ts', ['-r', '@swc-node/register', 'apps/proxy/src/main.ts'], redis.url),
    ];
    console.log(`NODE_OPTIONS of the proxies: ${process.env.PROXY_NODE_OPTIONS || '(none)'}; MALLOC_ARENA_MAX: ${process.env.MALLOC_ARENA_MAX || '(unset)'}`);
    console.log(`| proxy started as | RSS when ready | RSS after ${REQUESTS.toLocaleString('en')} requests | time for them |\n|---|---|---|---|`);
    for (const r of results) console.log(`| \`${r.label}\` | ${r.startedMb} MB | ${r.afterMb} MB | ${r.ms} ms |`);
    const [built, hook] = results;
    console.log(`\nregister hook / built: ${(hook.afterMb / built.afterMb).toFixed(2)}x after ${REQUESTS} requests`);
  } finally {
    sim.kill('SIGTERM');
    cp.kill('SIGTERM');
    await redis.stop();
  }
}

void main();
