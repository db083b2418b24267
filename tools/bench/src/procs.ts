import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { waitForPort } from '@switchyard/testing';

export const ROOT = path.resolve(__dirname, '../../..');

/** Every child runs in its own process group, so stopping it takes its children too. */
export class Proc {
  exited = false;
  constructor(readonly name: string, readonly child: ChildProcess, readonly logFile: string) {
    child.once('exit', () => (this.exited = true));
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** The last lines of the process's output, for error messages. */
  tail(lines = 15): string {
    try {
      return readFileSync(this.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  }

  /** SIGTERM to the group, SIGKILL after `graceMs`. */
  async stop(graceMs = 2000): Promise<void> {
    if (this.exited) return;
    const gone = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    signalGroup(this.pid, 'SIGTERM');
    const timer = setTimeout(() => signalGroup(this.pid, 'SIGKILL'), graceMs);
    await gone;
    clearTimeout(timer);
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  if (pid <= 0) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

/** Owns every process the harness starts and the temp dir they write to; kills them all on exit, error or signal. */
export class ProcessGroup {
  readonly dir = mkdtempSync(path.join(os.tmpdir(), 'sy-bench-'));
  private readonly procs: Proc[] = [];
  private readonly cleanups: Array<() => Promise<void> | void> = [];
  private stopped = false;

  constructor() {
    // Last resort, synchronous: whatever is still running dies with the harness.
    process.once('exit', () => {
      for (const p of this.procs) if (!p.exited) signalGroup(p.pid, 'SIGKILL');
    });
  }

  /** Spawns `cmd args` in a new process group with `ulimit -n` raised as far as the hard limit allows; `exec` keeps the pid. */
  spawn(name: string, cmd: string, args: string[], env: Record<string, string> = {}): Proc {
    const logFile = path.join(this.dir, `${name}.log`);
    const fd = openSync(logFile, 'a');
    const wrapper = 'ulimit -n 65535 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@"';
    const child = spawn('/bin/sh', ['-c', wrapper, 'sh', cmd, ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', fd, fd],
      detached: true,
    });
    closeSync(fd);
    const proc = new Proc(name, child, logFile);
    this.procs.push(proc);
    return proc;
  }

  /** Runs an app's entry file the way `npm run start:*` does. */
  node(name: string, entry: string, env: Record<string, string>): Proc {
    return this.spawn(name, process.execPath, ['-r', '@swc-node/register', path.join(ROOT, entry)], env);
  }

  async waitForPort(proc: Proc, port: number, timeoutMs = 30_000): Promise<void> {
    const died = new Promise<never>((_, reject) => proc.child.once('exit', (code) => reject(new Error(`${proc.name} exited (code ${code}) before listening:\n${proc.tail()}`))));
    await Promise.race([waitForPort(port, timeoutMs), died]);
  }

  onStop(fn: () => Promise<void> | void): void {
    this.cleanups.push(fn);
  }

  async stop(proc: Proc): Promise<void> {
    await proc.stop();
    const i = this.procs.indexOf(proc);
    if (i >= 0) this.procs.splice(i, 1);
  }

  /** Stops everything; the temp dir with every process's output is kept when `keepLogs` (after a failure). */
  async stopAll(keepLogs = false): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await Promise.all(this.procs.map((p) => p.stop()));
    for (const fn of this.cleanups.reverse()) await fn();
    if (!keepLogs) rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Whether a program is on the PATH. */
export function which(cmd: string): string | undefined {
  const r = spawnSync('/bin/sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** utime+stime ticks and the clock-tick rate, to turn /proc readings into seconds. */
export const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
