import { setTimeout as sleep } from 'node:timers/promises';
import { CliError, Command, parseInvocation, USAGE } from './args';
import { ControlPlaneClient } from './client';
import { formatInstances, formatKeys, formatStatus, formatSummary } from './format';

export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout: { write(chunk: string): unknown };
  stderr: { write(chunk: string): unknown };
  /** Aborted on Ctrl-C: ends `watch` cleanly, interrupts anything else. */
  signal?: AbortSignal;
}

/** ANSI: cursor home, then clear the screen, so each frame replaces the last one in place. */
const CLEAR = '\x1b[H\x1b[2J';

/** Runs one command and resolves with the process's exit code; never throws. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    const { connection, command } = parseInvocation(argv, io.env);
    const client = new ControlPlaneClient(connection, io.signal);
    await run(command, client, io);
    return 0;
  } catch (err) {
    if (io.signal?.aborted) return 130;
    // Anything but our own errors is a bug, still reported as one line: operators get no stack traces.
    const message = err instanceof CliError ? err.message : `unexpected failure: ${(err as Error)?.message ?? String(err)}`;
    io.stderr.write(`switchyard: ${message}\n`);
    return 1;
  }
}

async function run(command: Command, client: ControlPlaneClient, io: CliIo): Promise<void> {
  const out = (text: string) => io.stdout.write(text);
  switch (command.name) {
    case 'help':
      out(USAGE[command.topic ?? 'main']);
      return;
    case 'status': {
      const ready = await client.readiness();
      const status = await client.status();
      out(command.json ? JSON.stringify(status, null, 2) + '\n' : formatStatus(client.url, ready, status));
      return;
    }
    case 'instances': {
      const view = await client.instanceLoads(command.all);
      out(command.json ? JSON.stringify(view, null, 2) + '\n' : formatInstances(view, command.verbose));
      return;
    }
    case 'watch':
      return watch(command, client, io);
    case 'register': {
      // The control plane probes the URL first: a typo fails here with 422, not later with 503s.
      const body: Record<string, unknown> = { url: command.url, models: command.models, probe_now: command.probe };
      if (command.id !== undefined) body.instance_id = command.id;
      if (command.maxInflight !== undefined) body.max_inflight = command.maxInflight;
      if (command.weight !== undefined) body.weight = command.weight;
      if (command.apiKey !== undefined) body.api_key = command.apiKey;
      const res = await client.register(body);
      out(`registered ${res.instance_id} (probed by the control plane; not alive after ${res.ttl_s} s without a successful probe or heartbeat)\n`);
      return;
    }
    case 'unregister':
      await client.unregister(command.id);
      out(`unregistered ${command.id}\n`);
      return;
    case 'keys': {
      if (command.action === 'list') {
        const view = await client.keys();
        out(command.json ? JSON.stringify(view, null, 2) + '\n' : formatKeys(view.keys));
        return;
      }
      if (command.action === 'revoke') {
        await client.revokeKey(command.id);
        out(`revoked ${command.id} (every proxy refuses it from its next request)\n`);
        return;
      }
      const body: Record<string, unknown> = { name: command.keyName };
      if (command.models.length) body.models = command.models;
      if (command.rpm !== undefined) body.rpm = command.rpm;
      if (command.tpm !== undefined) body.tpm = command.tpm;
      const created = await client.createKey(body);
      out(command.json ? JSON.stringify(created, null, 2) + '\n' : `created ${created.id} (${created.name})\nkey: ${created.key}\nThis is the only time the key is shown; store it now.\n`);
      return;
    }
  }
}

/**
 * Redraws the instances view until the signal fires. The first fetch must succeed (a wrong URL or
 * token is a mistake to report, not to retry); later failures show in place and are retried.
 */
async function watch(command: Extract<Command, { name: 'watch' }>, client: ControlPlaneClient, io: CliIo): Promise<void> {
  let first = true;
  while (!io.signal?.aborted) {
    let body: string;
    try {
      const view = await client.instanceLoads(command.all);
      body = `${formatSummary(view)}\n\n${formatInstances(view, command.verbose)}`;
    } catch (err) {
      if (io.signal?.aborted) break;
      if (first || !(err instanceof CliError)) throw err;
      body = `switchyard: ${err.message} (retrying)\n`;
    }
    first = false;
    const header = `switchyard watch  ${client.url}  every ${command.intervalS}s  ${new Date().toLocaleTimeString()}  (Ctrl-C to quit)\n\n`;
    io.stdout.write(CLEAR + header + body);
    try {
      await sleep(command.intervalS * 1000, undefined, { signal: io.signal });
    } catch {
      break;
    }
  }
  io.stdout.write('\n');
}
