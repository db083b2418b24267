import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { parse } from 'yaml';
import { freePort, waitFor } from '@switchyard/testing';
import { helpVariables, ImageProcess, ROOT } from './image';

jest.setTimeout(120_000);

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  ports?: { published: number; target: number }[];
  volumes?: ({ target: string } | string)[];
  restart?: string;
  stop_grace_period?: string;
}

const TOKEN = 'compose-test-token';

/** The compose file as Debian's docker-compose resolves it (interpolation, anchors, defaults). */
function composeConfig(env: Record<string, string>): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync('docker-compose', ['-f', 'docker-compose.yml', 'config'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8' });
  if (r.error) throw new Error(`docker-compose is needed for this test (apt-get install docker-compose): ${r.error.message}`);
  return r;
}

const seconds = (d: string) => Number(/^(\d+)s$/.exec(d)?.[1] ?? NaN);

/** Dependencies first, as compose starts them. */
function startOrder(services: Record<string, Service>): string[] {
  const order: string[] = [];
  const visit = (name: string) => {
    if (order.includes(name)) return;
    for (const dep of Object.keys(services[name].depends_on ?? {})) visit(dep);
    order.push(name);
  };
  Object.keys(services).forEach(visit);
  return order;
}

describe('docker-compose.yml', () => {
  let services: Record<string, Service>;

  beforeAll(() => {
    const r = composeConfig({ ADMIN_TOKEN: TOKEN });
    expect(r.stderr).not.toMatch(/ERROR/);
    expect(r.status).toBe(0);
    services = (parse(r.stdout) as { services: Record<string, Service> }).services;
  });

  it('refuses to come up without ADMIN_TOKEN: the shipped fleet has no open admin API', () => {
    for (const env of [{}, { ADMIN_TOKEN: '' }] as Record<string, string>[]) {
      const r = composeConfig(env);
      expect(r.status).not.toBe(0);
      expect(r.stderr).toContain('ADMIN_TOKEN');
    }
    // Nothing opens it again: the control plane listens on 0.0.0.0, where it needs a token to start.
    for (const [name, s] of Object.entries(services)) expect([name, s.environment?.ALLOW_OPEN_ADMIN]).toEqual([name, undefined]);
    expect(services['control-plane'].environment?.HOST).toBe('0.0.0.0');
  });

  it('has health checks, restarts, healthy dependencies, Redis with AOF on a volume, and a proxy grace period above settle + drain', () => {
    for (const [name, s] of Object.entries(services)) {
      expect([name, s.restart]).toEqual([name, 'unless-stopped']);
      expect([name, s.healthcheck?.test?.[0]]).toEqual([name, 'CMD']);
      for (const [dep, { condition }] of Object.entries(s.depends_on ?? {})) expect([name, dep, condition]).toEqual([name, dep, 'service_healthy']);
    }
    const redis = services.redis;
    expect(redis.command?.join(' ')).toContain('--appendonly yes');
    expect(redis.volumes?.some((v) => (typeof v === 'string' ? /^[\w-]+:\/data(:|$)/.test(v) : v.target === '/data'))).toBe(true);
    const proxy = services.proxy;
    const env = proxy.environment ?? {};
    const grace = seconds(proxy.stop_grace_period ?? '');
    expect(grace).toBeGreaterThan(Number(env.DRAIN_SETTLE_S) + Number(env.DRAIN_TIMEOUT_S));
    expect(Number(env.TERMINATION_GRACE_S)).toBe(grace);
    expect(proxy.ports?.map((p) => p.target)).toContain(Number(env.PORT));
  });

  it("gives each server only variables it reads (those of its --help)", () => {
    for (const [name, s] of Object.entries(services)) {
      if (!s.build) continue;
      const known = helpVariables(s.command?.[0] ?? '');
      expect([name, Object.keys(s.environment ?? {}).filter((k) => !known.includes(k))]).toEqual([name, []]);
    }
  });

  describe('every service run as a plain process, with its command and environment', () => {
    const procs = new Map<string, ImageProcess>();
    let redisChild: ReturnType<typeof spawn> | undefined;
    let redisDir = '';
    const port: Record<string, number> = {};
    const hostPort: Record<string, number> = {};

    afterAll(async () => {
      for (const p of procs.values()) await p.kill();
      if (redisChild && redisChild.exitCode === null) {
        const gone = new Promise((r) => redisChild?.once('exit', r));
        redisChild.kill('SIGKILL');
        await gone;
      }
      if (redisDir) rmSync(redisDir, { recursive: true, force: true });
    });

    /** Service hostnames and ports as the containers see them, rewritten to this machine's free ports. */
    function rewrite(value: string): string {
      let out = value;
      for (const name of Object.keys(port)) out = out.split(`//${name}:${port[name]}`).join(`//127.0.0.1:${hostPort[name]}`);
      return out;
    }

    function environment(name: string): Record<string, string> {
      const env = Object.fromEntries(Object.entries(services[name].environment ?? {}).map(([k, v]) => [k, rewrite(String(v))]));
      return { ...env, PORT: String(hostPort[name]), HOST: '127.0.0.1' };
    }

    /** The service's own healthcheck command, run as compose runs it (inside the service's environment). */
    function healthy(name: string): boolean {
      const [, bin, ...args] = services[name].healthcheck?.test ?? [];
      if (bin === 'redis-cli') args.unshift('-p', String(hostPort[name]));
      const r = spawnSync(bin === 'node' ? process.execPath : bin, args, { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...environment(name) } });
      return r.status === 0;
    }

    it('comes up in dependency order, each healthy before its dependents start, and answers a chat completion through the proxy', async () => {
      for (const [name, s] of Object.entries(services)) {
        port[name] = s.environment?.PORT ? Number(s.environment.PORT) : s.image?.startsWith('redis') ? 6379 : NaN;
        expect([name, Number.isInteger(port[name])]).toEqual([name, true]);
        hostPort[name] = await freePort();
      }
      for (const name of startOrder(services)) {
        const s = services[name];
        if (s.build) {
          procs.set(name, new ImageProcess(s.command ?? [], environment(name)));
        } else {
          // redis: its command, on this machine's port, with a temp dir as its /data volume.
          redisDir = mkdtempSync(path.join(os.tmpdir(), 'sy-compose-redis-'));
          const [bin, ...args] = s.command ?? [];
          redisChild = spawn(bin, [...args, '--port', String(hostPort[name]), '--bind', '127.0.0.1', '--dir', redisDir], { stdio: 'ignore' });
        }
        const ok = await waitFor(() => healthy(name), 30_000, 200);
        expect([name, ok, procs.get(name)?.output.slice(-1500) ?? '']).toEqual([name, true, procs.get(name)?.output.slice(-1500) ?? '']);
      }

      const proxyUrl = `http://127.0.0.1:${hostPort.proxy}`;
      const cpUrl = `http://127.0.0.1:${hostPort['control-plane']}`;
      const sims = Object.keys(services).filter((n) => services[n].command?.[0] === 'sim-instance');
      const listed = async () =>
        ((await (await fetch(`${cpUrl}/v1/instances`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { instances: { instance_id: string; url: string }[] }).instances;
      expect(await waitFor(async () => (await listed()).length === sims.length, 20_000)).toBe(true);
      // Each sim registered under its advertised compose address (here rewritten to its local port).
      expect((await listed()).map((i) => [i.instance_id, i.url]).sort()).toEqual(sims.map((n) => [n, `http://127.0.0.1:${hostPort[n]}`]).sort());
      expect(await waitFor(async () => (await fetch(`${proxyUrl}/readyz`)).ok && (await (await fetch(`${proxyUrl}/v1/models`)).text()).includes('sim-llama'), 20_000)).toBe(true);
      // The admin API is closed: no token, no listing.
      expect((await fetch(`${cpUrl}/v1/instances`)).status).toBe(401);
      // The rogue registration (weight 1000, to receive every prompt) fails whichever way it is sent.
      const before = (await listed()).map((i) => i.instance_id).sort();
      const rogue = JSON.stringify({ instance_id: 'rogue', url: 'http://127.0.0.1:9', models: ['sim-llama'], weight: 1000 });
      const attempts: [Record<string, string>, string, number][] = [
        [{ 'content-type': 'application/json' }, rogue, 401],
        [{ 'content-type': 'application/json', authorization: 'Bearer guess' }, rogue, 401],
        [{ 'content-type': 'application/x-www-form-urlencoded' }, 'instance_id=rogue&url=http%3A%2F%2F127.0.0.1%3A9&models=sim-llama&weight=1000', 415],
        [{ 'content-type': 'text/plain' }, rogue, 415],
      ];
      for (const [headers, body, status] of attempts) {
        expect([headers['content-type'], (await fetch(`${cpUrl}/v1/instances`, { method: 'POST', headers, body })).status]).toEqual([headers['content-type'], status]);
      }
      expect((await listed()).map((i) => i.instance_id).sort()).toEqual(before);

      const client = new OpenAI({ baseURL: `${proxyUrl}/v1`, apiKey: 'unused', maxRetries: 0 });
      const done = await client.chat.completions.create({ model: 'sim-llama', messages: [{ role: 'user', content: 'hello compose' }] });
      expect(done.choices[0].message.content).toMatch(/^tok( tok)*$/);
      const stream = await client.chat.completions.create({ model: 'sim-llama', messages: [{ role: 'user', content: 'stream' }], max_tokens: 5, stream: true });
      let text = '';
      for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
      expect(text).toBe('tok tok tok tok tok');
    });

    it('stops on SIGTERM, dependents first: every server exits 0 within its stop_grace_period, with JSON logs only', async () => {
      for (const name of startOrder(services).reverse()) {
        const p = procs.get(name);
        if (!p) continue;
        p.child.kill('SIGTERM');
        const grace = seconds(services[name].stop_grace_period ?? '10s');
        let timer: NodeJS.Timeout | undefined;
        const exit = await Promise.race([p.exit, new Promise((r) => (timer = setTimeout(() => r('still running'), grace * 1000)))]);
        clearTimeout(timer);
        expect([name, exit]).toEqual([name, { code: 0, signal: null }]);
        expect(p.jsonLines().length).toBeGreaterThan(0);
      }
    });
  });
});
