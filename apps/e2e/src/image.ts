import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '../../..');

/**
 * The image's entry point as the Dockerfile declares it (exec-form ENTRYPOINT and the ENV lines of
 * the last stage). The runtime stage lays out /app as the repository is laid out after
 * `npm run build` (bin/, dist/, node_modules/), so running it from the repository root with the
 * same argv and environment is running what the image runs, minus the container.
 */
export function imageEntryPoint(): { argv: string[]; env: Record<string, string>; workdir: string } {
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const lastStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  const entry = /^ENTRYPOINT (\[.*\])$/m.exec(lastStage);
  if (!entry) throw new Error('the Dockerfile has no exec-form ENTRYPOINT in its last stage');
  const env: Record<string, string> = {};
  for (const m of lastStage.matchAll(/^ENV (.+)$/gm)) {
    for (const pair of m[1].trim().split(/\s+/)) {
      const eq = pair.indexOf('=');
      env[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  const workdir = /^WORKDIR (\S+)$/m.exec(lastStage)?.[1] ?? '/';
  return { argv: JSON.parse(entry[1]) as string[], env, workdir };
}

/** A server started exactly as the image starts it: the ENTRYPOINT's argv plus the command, the image's ENV under the given one. */
export class ImageProcess {
  readonly child: ChildProcess;
  output = '';
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(command: string[], env: Record<string, string>) {
    const image = imageEntryPoint();
    const [bin, ...args] = [...image.argv, ...command];
    // Only PATH from the host: the server sees the image's and the service's variables, nothing else.
    this.child = spawn(bin === 'node' ? process.execPath : bin, args, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...image.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout?.on('data', (d) => (this.output += d));
    this.child.stderr?.on('data', (d) => (this.output += d));
    this.exit = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** SIGKILL if still running: cleanup after a failed test. */
  async kill(): Promise<void> {
    if (this.exited) return;
    this.child.kill('SIGKILL');
    await this.exit;
  }

  /** The log lines it printed; each must be one JSON object. */
  jsonLines(): Record<string, unknown>[] {
    return this.output
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        try {
          return JSON.parse(line) as Record<string, unknown>;
        } catch {
          throw new Error(`not a JSON log line: ${line}`);
        }
      });
  }
}

/** Variable names a server documents in its --help (the ones it reads), run through the image's entry point. */
export function helpVariables(server: string): string[] {
  const image = imageEntryPoint();
  const [bin, ...args] = [...image.argv, server, '--help'];
  const r = spawnSync(bin === 'node' ? process.execPath : bin, args, { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${server} --help exited ${r.status}: ${r.stderr}`);
  const table = r.stdout.slice(r.stdout.indexOf('VARIABLE'));
  return [...table.matchAll(/^ {2}([A-Z][A-Z0-9_]+) /gm)].map((m) => m[1]).filter((n) => n !== 'VARIABLE');
}
