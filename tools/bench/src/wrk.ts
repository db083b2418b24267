import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

export interface WrkResult {
  requests: number;
  durationS: number;
  rps: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  meanMs: number;
  errors: number;
}

const MARK = 'WRK_JSON ';

/** A wrk Lua script that POSTs `body` and prints the summary as one JSON line (latencies in µs, as wrk keeps them). */
export function wrkScript(body: string): string {
  return `wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = ${JSON.stringify(body)}
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('${MARK}{"requests":%d,"duration_us":%d,"p50":%d,"p90":%d,"p99":%d,"mean":%.1f,"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean,
    e.connect, e.read, e.write, e.timeout, e.status))
end
`;
}

/** Reads the JSON line the script's `done` hook printed. */
export function parseWrkOutput(stdout: string): WrkResult {
  const line = stdout.split('\n').find((l) => l.startsWith(MARK));
  if (!line) throw new Error(`wrk printed no summary:\n${stdout}`);
  const j = JSON.parse(line.slice(MARK.length)) as Record<string, number>;
  const durationS = j.duration_us / 1e6;
  return {
    requests: j.requests,
    durationS,
    rps: j.requests / durationS,
    p50Ms: j.p50 / 1000,
    p90Ms: j.p90 / 1000,
    p99Ms: j.p99 / 1000,
    meanMs: j.mean / 1000,
    errors: j.connect + j.read + j.write + j.timeout + j.status,
  };
}

export interface WrkRun {
  url: string;
  body: string;
  connections: number;
  durationS: number;
  dir: string;
}

let scripts = 0;

/** One wrk run with a single thread (the load generator must not take more than its share of 2 cores). */
export function runWrk(run: WrkRun): Promise<WrkResult> {
  const script = path.join(run.dir, `wrk-${++scripts}.lua`);
  writeFileSync(script, wrkScript(run.body));
  const args = ['-t1', `-c${run.connections}`, `-d${run.durationS}s`, '--timeout', '10s', '-s', script, run.url];
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const killer = setTimeout(() => child.kill('SIGKILL'), (run.durationS + 30) * 1000);
    child.once('error', reject);
    child.once('exit', () => {
      clearTimeout(killer);
      try {
        resolve(parseWrkOutput(out));
      } catch (err) {
        reject(err);
      }
    });
  });
}
