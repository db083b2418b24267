import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { RedisLoadStore } from '@switchyard/load-store';
import { freePort, RedisServer } from '@switchyard/testing';
import { AppProcess } from './processes';

jest.setTimeout(60_000);

const ROOT = path.resolve(__dirname, '../../..');
const BIN = path.join(ROOT, 'bin/switchyard.js');
const TOKEN = 'cli-secret';
const PROXY = 'px-cli@1';

const redis = new RedisServer();
let cp: AppProcess;
let base = '';
let proxy: RedisLoadStore;
let heartbeats: NodeJS.Timeout | undefined;
/** Instances the test keeps alive with heartbeats, as their agents would. */
const keepAlive = new Set<string>();

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real bin from an unrelated directory, as an operator would from anywhere. */
function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: os.tmpdir(),
      env: { ...process.env, CONTROL_PLANE_URL: base, ADMIN_TOKEN: TOKEN, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The table as cells: columns are separated by at least two spaces. */
function table(stdout: string): Record<string, string>[] {
  const [header, ...rows] = stdout.trimEnd().split('\n').map((line) => line.trim().split(/\s{2,}/));
  return rows.map((cells) => Object.fromEntries(header.map((h, k) => [h, cells[k]])));
}

async function rows(args: string[] = []): Promise<Record<string, Record<string, string>>> {
  const r = await cli(['instances', ...args]);
  expect(r).toMatchObject({ code: 0, stderr: '' });
  return Object.fromEntries(table(r.stdout).map((row) => [row.ID, row]));
}

/** A failure the operator sees: exit 1 and exactly one line on stderr, no stack trace. */
function expectOneLineError(r: Run, pattern: RegExp) {
  expect(r.code).toBe(1);
  expect(r.stdout).toBe('');
  expect(r.stderr.endsWith('\n')).toBe(true);
  expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(pattern);
  expect(r.stderr).not.toMatch(/\n\s+at /);
}

async function heartbeat(id: string, body: Record<string, number> = {}) {
  const res = await fetch(`${base}/v1/instances/${encodeURIComponent(id)}/heartbeat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
}

async function eventually(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

beforeAll(async () => {
  await redis.start();
  const port = await freePort();
  cp = await new AppProcess('apps/control-plane/src/main.ts', { REDIS_URL: redis.url, ADMIN_TOKEN: TOKEN, INSTANCE_TTL_S: '3' }).start(port);
  base = `http://127.0.0.1:${port}`;
  proxy = new RedisLoadStore({ url: redis.url });
  heartbeats = setInterval(() => {
    for (const id of keepAlive) void heartbeat(id).catch(() => undefined);
  }, 1000);
});

afterAll(async () => {
  clearInterval(heartbeats);
  await proxy?.close();
  await cp?.stop();
  await redis.stop();
});

describe('switchyard CLI against a real control plane', () => {
  it('prints help and exits 0', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(0);
    for (const command of ['status', 'instances', 'watch', 'register', 'unregister']) expect(r.stdout).toContain(command);
    expect((await cli(['register', '--help'])).stdout).toMatch(/--max-inflight N/);
  });

  it('registers instances through the admin API', async () => {
    const a = await cli(['register', 'http://127.0.0.1:9201', '--model', 'm-a', '--id', 'a', '--max-inflight', '4', '--weight', '2', '--no-probe']);
    expect(a).toMatchObject({ code: 0, stderr: '' });
    expect(a.stdout).toMatch(/^registered a /);
    const b = await cli(['register', 'http://127.0.0.1:9202', '-m', 'm-b', '-m', 'm-shared', '--no-probe']);
    expect(b.code).toBe(0);
    expect(b.stdout).toMatch(/^registered hp_127\.0\.0\.1:9202 /);
    keepAlive.add('a').add('hp_127.0.0.1:9202');

    const res = await fetch(`${base}/v1/instances/a`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await res.json()).toMatchObject({ url: 'http://127.0.0.1:9201', models: ['m-a'], max_inflight: 4, weight: 2 });
  });

  it('probes the URL before registering, and refuses one that cannot be reached', async () => {
    const r = await cli(['register', 'http://127.0.0.1:9209', '-m', 'm-typo', '--id', 'typo']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/url: http:\/\/127\.0\.0\.1:9209 cannot be reached: GET \/health: .*ECONNREFUSED/);
    expect((await fetch(`${base}/v1/instances/typo`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(404);
  });

  it('lists instances with - for unknown metrics and 0 for measured zeros', async () => {
    let list = await rows();
    expect(list.a).toEqual({ ID: 'a', MODELS: 'm-a', ALIVE: 'yes', INFLIGHT: '0', QPS_1M: '-', GPU_UTIL: '-', 'LAST SEEN': expect.stringMatching(/^\d+s ago$/) });
    expect(list['hp_127.0.0.1:9202']).toMatchObject({ MODELS: 'm-b,m-shared', QPS_1M: '-', GPU_UTIL: '-' });

    await heartbeat('a', { qps_1m: 0, gpu_util: 0 });
    await heartbeat('hp_127.0.0.1:9202', { qps_1m: 12.5, gpu_util: 71 });
    list = await rows();
    expect(list.a).toMatchObject({ QPS_1M: '0', GPU_UTIL: '0%' });
    expect(list['hp_127.0.0.1:9202']).toMatchObject({ QPS_1M: '12.5', GPU_UTIL: '71%' });
  });

  it('shows what proxies hold in flight, by proxy with -v, and the totals in status', async () => {
    // Play a proxy: a lease, then two slots taken through the shared store.
    await proxy.renewLease({ proxy_id: PROXY, inflight_http: 2, queued: {}, draining: false, degraded: false }, 60_000);
    for (let k = 0; k < 2; k++) expect(await proxy.acquire({ proxyId: PROXY, model: 'm-a', strategy: 'least_load' })).toMatchObject({ kind: 'acquired', instance_id: 'a' });

    expect((await rows()).a.INFLIGHT).toBe('2');
    const verbose = await rows(['-v']);
    expect(verbose.a).toMatchObject({ INFLIGHT: '2', MAX: '4', WEIGHT: '2', 'BY PROXY': `${PROXY}=2`, URL: 'http://127.0.0.1:9201' });
    expect(verbose['hp_127.0.0.1:9202']).toMatchObject({ INFLIGHT: '0', MAX: '-', 'BY PROXY': '-' });

    const status = await cli(['status']);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`^control plane\\s+${base.replace(/\./g, '\\.')}\\s+ready`, 'm'));
    expect(status.stdout).toMatch(/^instances\s+2 alive, 0 expired$/m);
    expect(status.stdout).toMatch(/^proxies\s+1 alive, 0 expired, 0 draining$/m);
    expect(status.stdout).toMatch(/^in flight\s+2$/m);
    expect(status.stdout).toMatch(/^queued\s+0$/m);

    await proxy.release(PROXY, 'a');
    expect((await rows()).a.INFLIGHT).toBe('1');
  });

  it('prints the debug view as JSON with --json', async () => {
    const r = await cli(['instances', '--json']);
    expect(r.code).toBe(0);
    const view = JSON.parse(r.stdout);
    expect(view.null_semantics).toMatch(/null means unknown/);
    expect(view.instances.find((i: { instance_id: string }) => i.instance_id === 'a')).toMatchObject({ inflight: 1, inflight_by_proxy: { [PROXY]: 1 }, qps_1m: 0 });
    expect(JSON.parse((await cli(['status', '--json'])).stdout)).toMatchObject({ status: 'ok', instances: { alive: 2 } });
  });

  it('shows expired instances only with --all', async () => {
    expect((await cli(['register', 'http://127.0.0.1:9203', '-m', 'm-old', '--id', 'old', '--no-probe'])).code).toBe(0);
    expect(Object.keys(await rows())).toContain('old');
    // No heartbeats: it expires after the control plane's 3 s TTL.
    await eventually('old to expire', async () => !('old' in (await rows())));
    expect((await rows(['--all'])).old).toMatchObject({ ALIVE: 'expired' });
  });

  it('unregisters, and says so when the id is unknown', async () => {
    const r = await cli(['unregister', 'old']);
    expect(r).toMatchObject({ code: 0, stdout: 'unregistered old\n' });
    expect(Object.keys(await rows(['--all']))).not.toContain('old');
    expectOneLineError(await cli(['unregister', 'old']), /^switchyard: DELETE \/v1\/instances\/old failed with 404: instance 'old' is not registered/);
  });

  it('fails with one clear line and exit 1 on a wrong or missing token, an unreachable control plane and bad flags', async () => {
    expectOneLineError(await cli(['instances'], { ADMIN_TOKEN: 'wrong' }), /refused the admin token \(401\); check ADMIN_TOKEN or --token/);
    expectOneLineError(await cli(['status', '--token', 'wrong']), /refused the admin token/);
    expectOneLineError(await cli(['register', 'http://127.0.0.1:9204', '-m', 'x'], { ADMIN_TOKEN: '' }), /needs an admin token \(401\); set ADMIN_TOKEN or pass --token/);
    const closed = await freePort();
    expectOneLineError(await cli(['status'], { CONTROL_PLANE_URL: `http://127.0.0.1:${closed}` }), new RegExp(`cannot reach the control plane at http://127\\.0\\.0\\.1:${closed} \\(ECONNREFUSED\\)`));
    expectOneLineError(await cli(['watch', '--url', `http://127.0.0.1:${closed}`]), /cannot reach the control plane/);
    expectOneLineError(await cli(['instances', '--bogus']), /Unknown option '--bogus'/);
    expectOneLineError(await cli(['register', 'http://127.0.0.1:9204', '-m', 'x', '--max-inflight', 'lots']), /--max-inflight must be a number, got 'lots'/);
    expectOneLineError(await cli(['register', 'http://127.0.0.1:9204', '-m', 'x', '--id', 'bad id!']), /failed with 400: instance_id: must be/);
    expectOneLineError(await cli(['launch']), /unknown command 'launch'/);
    expect(Object.keys(await rows(['--all']))).not.toContain('hp_127.0.0.1:9204');
  });
});

const HAS_TMUX = spawnSync('tmux', ['-V']).status === 0;

// `watch` redraws a terminal, so it is tested under a real pseudo-terminal: a tmux pane.
describe('switchyard keys', () => {
  it('creates a key (secret printed once), lists it with its limits but never the secret, revokes it', async () => {
    const created = await cli(['keys', 'create', 'team-a', '--model', 'llama', '--rpm', '10', '--tpm', '5000']);
    expect(created).toMatchObject({ code: 0, stderr: '' });
    const id = /^created (key_[0-9a-f]{16}) \(team-a\)$/m.exec(created.stdout)?.[1];
    const secret = /^key: (sk-sy-\S+)$/m.exec(created.stdout)?.[1];
    expect(id).toBeDefined();
    expect(secret).toBeDefined();
    const list = await cli(['keys', 'list']);
    expect(list).toMatchObject({ code: 0, stderr: '' });
    const row = table(list.stdout).find((r) => r.ID === id);
    expect(row).toEqual({ ID: id, NAME: 'team-a', PREFIX: `${secret!.slice(0, 10)}…`, MODELS: 'llama', 'REQUESTS/MIN': '0/10', 'TOKENS/MIN': '0/5000', SOURCE: 'api' });
    expect(list.stdout).not.toContain(secret!);
    expect((await cli(['keys', 'list', '--json'])).stdout).not.toContain(secret!);
    expect(await cli(['keys', 'revoke', id!])).toMatchObject({ code: 0, stdout: `revoked ${id} (every proxy refuses it from its next request)\n` });
    expect(table((await cli(['keys', 'list'])).stdout).find((r) => r.ID === id)).toBeUndefined();
    expectOneLineError(await cli(['keys', 'revoke', id!]), /DELETE \/v1\/keys\/key_\w+ failed with 404/);
  });

  it('refuses a bad action or limit with one line, before calling the control plane', async () => {
    expectOneLineError(await cli(['keys', 'rotate']), /unknown action 'keys rotate'; valid: list, create, revoke/);
    expectOneLineError(await cli(['keys', 'create', 'x', '--rpm', '0']), /--rpm must be a whole number of at least 1/);
    expectOneLineError(await cli(['keys', 'create']), /'keys' needs NAME/);
    expectOneLineError(await cli(['keys', 'list', '--rpm', '3']), /--rpm is not an option of 'keys list'/);
    expect((await cli(['keys', '--help'])).stdout).toMatch(/switchyard keys create NAME/);
    expect((await cli(['--help'])).stdout).toContain('keys list|create|revoke');
  });
});

describe('switchyard watch in a terminal', () => {
  const socket = `sy-cli-${process.pid}`;
  let dir = '';
  const tmux = (...args: string[]) => {
    const r = spawnSync('tmux', ['-L', socket, '-f', path.join(dir, 'tmux.conf'), ...args], { encoding: 'utf8', env: { ...process.env, TMUX: '' } });
    if (r.status !== 0) throw new Error(`tmux ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const screen = () => tmux('capture-pane', '-p', '-t', 'watch');

  beforeAll(() => {
    if (!HAS_TMUX) return;
    dir = mkdtempSync(path.join(os.tmpdir(), 'sy-tmux-'));
    // The pane stays after the process ends, so its last words can still be read.
    writeFileSync(path.join(dir, 'tmux.conf'), 'set -g remain-on-exit on\n');
    // tmux's own exit-status field is not reliably filled in, so bash reports it. Bash waits out a
    // Ctrl-C its child handles, and dies with the child only if the child died of it.
    writeFileSync(
      path.join(dir, 'watch.sh'),
      `#!/bin/bash\nexport CONTROL_PLANE_URL='${base}' ADMIN_TOKEN='${TOKEN}'\n'${process.execPath}' '${BIN}' watch --interval 0.3\necho "watch exited with status $?"\n`,
    );
  });

  afterAll(() => {
    if (!HAS_TMUX) return;
    spawnSync('tmux', ['-L', socket, 'kill-server']);
    rmSync(dir, { recursive: true, force: true });
  });

  (HAS_TMUX ? it : it.skip)(
    HAS_TMUX ? 'redraws the instances in place, shows a new one, and quits on Ctrl-C with exit 0' : 'watch under a terminal [SKIPPED: tmux is not installed; apt-get install -y tmux]',
    async () => {
      tmux('new-session', '-d', '-s', 'watch', '-x', '160', '-y', '40', `bash ${path.join(dir, 'watch.sh')}`);

      await eventually('both instances on screen', () => /^a\s+m-a\s+yes/m.test(screen()) && /^hp_127\.0\.0\.1:9202\s+m-b,m-shared\s+yes/m.test(screen()));
      expect(screen()).not.toMatch(/^new\s/m);

      expect((await cli(['register', 'http://127.0.0.1:9205', '-m', 'm-new', '--id', 'new', '--no-probe'])).code).toBe(0);
      await eventually('the new instance on screen', () => /^new\s+m-new\s+yes\s+0\s+-\s+-/m.test(screen()));
      // Redrawn in place: one frame on screen, not frames appended below each other.
      const frame = screen();
      expect(frame.match(/switchyard watch/g)).toHaveLength(1);
      expect(frame.match(/^ID\s+MODELS/gm)).toHaveLength(1);

      tmux('send-keys', '-t', 'watch', 'C-c');
      await eventually('watch to exit', () => /watch exited with status \d+/.test(screen()));
      expect(screen()).toMatch(/watch exited with status 0$/m);
    },
  );
});
