import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import OpenAI from 'openai';
import { freePort, RedisServer, waitFor } from '@switchyard/testing';
import { helpVariables, ImageProcess, imageEntryPoint, ROOT } from './image';

jest.setTimeout(90_000);

/** Every backticked variable name in the first column of the README's table for one server. */
function readmeVariables(heading: string): string[] {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf(heading);
  if (start < 0) throw new Error(`README has no section "${heading}"`);
  const section = readme.slice(start + heading.length).split('\n## ')[0].split('\n#')[0];
  const names = section
    .split('\n')
    .filter((l) => l.startsWith('| `'))
    .flatMap((l) => [...l.split('|')[1].matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]));
  return [...new Set(names)];
}

async function serve(command: string, env: Record<string, string>, port?: number): Promise<{ proc: ImageProcess; url: string }> {
  port ??= await freePort();
  const proc = new ImageProcess([command], { ...env, PORT: String(port), HOST: '127.0.0.1' });
  const url = `http://127.0.0.1:${port}`;
  const up = await waitFor(async () => !proc.exited && (await fetch(`${url}/healthz`)).ok, 20_000, 50);
  if (!up) throw new Error(`${command} did not answer /healthz:\n${proc.output.slice(-2000)}`);
  return { proc, url };
}

describe('the image entry point (ENTRYPOINT + command, node dist/…)', () => {
  it('is node itself running the built server, never npm or the TypeScript register hook', () => {
    const { argv, env } = imageEntryPoint();
    expect(argv[0]).toBe('node');
    expect(argv.join(' ')).not.toMatch(/npm|swc-node|\.ts\b/);
    expect(env.NODE_ENV).toBe('production');
  });

  it('runs from what the runtime stage holds: production dependencies, dist/, the entry point; as node, not root', () => {
    const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    const stages = dockerfile.split(/^FROM /m).slice(1);
    const runtime = stages[stages.length - 1];
    const deps = stages.find((s) => /^COPY package\.json package-lock\.json/m.test(s) && /npm ci --omit=dev/.test(s));
    expect(deps).toBeDefined();
    expect(runtime).toMatch(/^USER node$/m);
    expect(runtime).not.toMatch(/^RUN npm|^COPY (apps|libs|tools|docs)\b|^COPY \. /m);
    // Every file the entry point and the health check name is copied in.
    // Paths under WORKDIR: `COPY src dir/` lands at dir/<basename of src>.
    const copied = [...runtime.matchAll(/^COPY (?:--\S+ )*(\S+) (\S+)$/gm)].map(([, src, dest]) => path.posix.normalize(dest.endsWith('/') ? path.posix.join(dest, path.posix.basename(src)) : dest));
    const { argv } = imageEntryPoint();
    const health = /^HEALTHCHECK .*CMD (\[.*\])$/m.exec(runtime);
    expect(health).not.toBeNull();
    for (const file of [argv[1], (JSON.parse(health![1]) as string[])[1]]) {
      expect([file, copied.some((c) => file === c || file.startsWith(`${c}/`))]).toEqual([file, true]);
    }
    expect(copied).toEqual(expect.arrayContaining(['node_modules', 'dist', 'package.json']));
    // Every package dist/ requires is a production dependency (npm ci --omit=dev installs only those).
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const walk = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
    const required = new Set(
      walk(path.join(ROOT, 'dist'))
        .filter((f) => f.endsWith('.js'))
        .flatMap((f) => [...readFileSync(f, 'utf8').matchAll(/require\("([^".][^"]*)"\)/g)].map((m) => m[1]))
        .map((spec) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]))
        .filter((name) => !name.startsWith('node:') && !builtinModules.includes(name)),
    );
    expect([...required].filter((name) => !(name in pkg.dependencies))).toEqual([]);
    expect(required.size).toBeGreaterThan(5);
  });

  it.each([
    ['proxy', '### Proxy'],
    ['control-plane', '### Control plane'],
    ['sim-instance', '### Sim instance'],
  ])('%s --help lists exactly the variables of its README table and exits 0', (server, heading) => {
    expect(helpVariables(server).sort()).toEqual(readmeVariables(heading).sort());
  });

  it('--version prints the package version and exits 0, an unknown argument exits 2 without starting', async () => {
    const version = new ImageProcess(['proxy', '--version'], {});
    expect(await version.exit).toEqual({ code: 0, signal: null });
    expect(version.output.trim()).toBe(`switchyard ${JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version}`);
    const bad = new ImageProcess(['control-plane', '--port', '80'], {});
    expect((await bad.exit).code).toBe(2);
    expect(bad.output).toContain('unknown argument: --port 80');
  });

  it('a bad variable stops the server naming it; an empty one means unset', async () => {
    const bad = new ImageProcess(['control-plane'], { INSTANCE_TTL_S: 'soon' });
    expect((await bad.exit).code).toBe(2);
    expect(bad.output).toContain('invalid configuration: INSTANCE_TTL_S');
    // ADMIN_TOKEN="" (what compose passes for an unset variable) starts an open control plane, with its warning.
    const { proc } = await serve('control-plane', { ADMIN_TOKEN: '', LOG_LEVEL: '', REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
    await proc.kill();
    expect(proc.jsonLines().some((l) => String(l.msg).startsWith('ADMIN_TOKEN is not set'))).toBe(true);
  });

  it("the image's control plane (HOST=0.0.0.0 from its ENV) will not start without a token: exit 2, naming ADMIN_TOKEN", async () => {
    expect(imageEntryPoint().env.HOST).toBe('0.0.0.0');
    const open = new ImageProcess(['control-plane'], { PORT: String(await freePort()), REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
    expect((await open.exit).code).toBe(2);
    expect(open.output).toContain('invalid configuration: ADMIN_TOKEN: required when HOST (0.0.0.0) is not a loopback address');
  });

  it("npm start's CONTROL_PLANE_PORT is reported by its own name", async () => {
    const r = spawnSync(process.execPath, ['dist/apps/control-plane/src/single-process.js'], { cwd: ROOT, env: { PATH: process.env.PATH, CONTROL_PLANE_PORT: 'eighty' }, encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('invalid configuration: CONTROL_PLANE_PORT');
  });
});

describe('SIGTERM to the proxy started as the image starts it', () => {
  const redis = new RedisServer();
  const procs: ImageProcess[] = [];
  afterAll(async () => {
    for (const p of procs.reverse()) await p.kill();
    await redis.stop();
  });

  it('drains: the open stream finishes with every token, the process exits 0, every log line is JSON (at trace level)', async () => {
    await redis.start();
    const token = 'entry-point-token';
    // The sim starts before its control plane listens (as it may under compose or Kubernetes): it retries.
    const cpPort = await freePort();
    const sim = await serve('sim-instance', { CONTROL_PLANE_URL: `http://127.0.0.1:${cpPort}`, ADMIN_TOKEN: token, INSTANCE_ID: 'sim-a', TOKEN_MS: '10', TTFT_BASE_MS: '5' });
    procs.push(sim.proc);
    expect(await waitFor(() => /control plane at \S+ not reachable/.test(sim.proc.output), 10_000)).toBe(true);
    const cp = await serve('control-plane', { REDIS_URL: redis.url, ADMIN_TOKEN: token, LOG_LEVEL: 'trace' }, cpPort);
    procs.push(cp.proc);
    const proxy = await serve('proxy', { REDIS_URL: redis.url, DRAIN_SETTLE_S: '2', DRAIN_TIMEOUT_S: '20', PROXY_NAME: 'entry', LOG_LEVEL: 'trace' });
    procs.push(proxy.proc);
    expect(await waitFor(async () => (await fetch(`${proxy.url}/readyz`)).ok && (await (await fetch(`${proxy.url}/v1/models`)).text()).includes('sim-llama'), 20_000)).toBe(true);

    const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    // 400 tokens at 10 ms: the stream is open for 4 s or more, across the settle window and into the drain.
    const stream = await client.chat.completions.create({ model: 'sim-llama', messages: [{ role: 'user', content: 'drain me' }], max_tokens: 400, stream: true });
    let text = '';
    let finish: string | null | undefined;
    let notReady: Promise<boolean> | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (!notReady && text.length > 0) {
        expect(proxy.proc.child.kill('SIGTERM')).toBe(true);
        // Readiness turns within the settle window, while the stream goes on.
        notReady = waitFor(async () => (await fetch(`${proxy.url}/readyz`)).status === 503, 5000);
      }
    }
    expect(await notReady).toBe(true);
    expect(text).toBe('tok' + ' tok'.repeat(399));
    expect(finish).toBe('length');
    expect(await proxy.proc.exit).toEqual({ code: 0, signal: null });

    const lines = proxy.proc.jsonLines();
    expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining([expect.stringMatching(/^draining: not ready/), expect.stringMatching(/^draining: refusing new work; waiting for [1-9]\d* open/), 'drained']));

    // The control plane and the sim stop on SIGTERM too, with exit 0 and JSON only.
    for (const p of [sim.proc, cp.proc]) {
      p.child.kill('SIGTERM');
      expect(await p.exit).toEqual({ code: 0, signal: null });
      expect(p.jsonLines().length).toBeGreaterThan(0);
    }
  });
});
