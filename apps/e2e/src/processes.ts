import { ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { waitForPort } from '@switchyard/testing';

const ROOT = path.resolve(__dirname, '../../..');

/** Runs an app's entry file as a real process, the way `npm run start:*` does. */
export class AppProcess {
  private child?: ChildProcess;
  output = '';

  constructor(private readonly entry: string, private readonly env: Record<string, string>) {}

  private spawn(extraEnv: Record<string, string>): ChildProcess {
    const child = spawn(process.execPath, ['-r', '@swc-node/register', path.join(ROOT, this.entry)], {
      cwd: ROOT,
      env: { ...process.env, ...this.env, ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (d) => (this.output += d));
    child.stderr?.on('data', (d) => (this.output += d));
    this.child = child;
    return child;
  }

  /** Starts the process and waits for its port; a process that exits first, or never listens, fails with what it printed. */
  async start(port: number): Promise<this> {
    const child = this.spawn({ PORT: String(port) });
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code, signal) => reject(new Error(`${this.entry} exited (${code ?? signal}) before listening on ${port}:\n${this.output.slice(-2000)}`))),
    );
    try {
      await Promise.race([waitForPort(port, 30_000), exited]);
    } catch (err) {
      child.kill('SIGKILL');
      throw new Error(`${(err as Error).message}\n${this.output.slice(-2000)}`);
    }
    exited.catch(() => undefined);
    return this;
  }

  /** Runs to exit (for config errors) and resolves with the exit code. */
  runToExit(): Promise<number | null> {
    const child = this.spawn({});
    return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Sends a signal and does not wait. */
  signal(sig: NodeJS.Signals): void {
    this.child?.kill(sig);
  }

  /** Resolves with the exit code once the process has exited. */
  exited(): Promise<number | null> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child?.exitCode ?? null);
    return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  /** Stops the process and waits for it; SIGINT, so a proxy skips its drain's settle window. */
  async stop(sig: NodeJS.Signals = 'SIGINT'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = this.exited();
    child.kill(sig);
    await exited;
  }
}
