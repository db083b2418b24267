import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Proc, ProcessGroup } from './procs';

/**
 * The peers, each with one worker (as one Switchyard proxy is one node process),
 * upstream keep-alive, no response buffering (streams pass through as they come),
 * and configs, pid and logs in the harness's temp dir, never the system service.
 */
export function nginxConfig(dir: string, port: number, upstreams: number[]): string {
  const user = process.getuid?.() === 0 ? 'user root;\n' : '';
  return `${user}worker_processes 1;
daemon off;
master_process on;
pid ${dir}/nginx.pid;
error_log ${dir}/nginx-error.log warn;
worker_rlimit_nofile 20000;
events { worker_connections 16000; }
http {
  access_log off;
  client_body_temp_path ${dir}/nginx-body;
  proxy_temp_path ${dir}/nginx-proxy;
  fastcgi_temp_path ${dir}/nginx-fastcgi;
  uwsgi_temp_path ${dir}/nginx-uwsgi;
  scgi_temp_path ${dir}/nginx-scgi;
  upstream fleet {
    least_conn;
${upstreams.map((p) => `    server 127.0.0.1:${p};`).join('\n')}
    keepalive 256;
    keepalive_requests 1000000;
    keepalive_timeout 60s;
  }
  server {
    listen 127.0.0.1:${port};
    keepalive_requests 1000000;
    keepalive_timeout 65s;
    location / {
      proxy_pass http://fleet;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 600s;
    }
  }
}
`;
}

export function haproxyConfig(dir: string, port: number, upstreams: number[]): string {
  return `global
  nbthread 1
  maxconn 9000
  pidfile ${dir}/haproxy.pid
defaults
  mode http
  timeout connect 5s
  timeout client 600s
  timeout server 600s
  timeout http-keep-alive 65s
  option http-keep-alive
  http-reuse always
frontend fe
  bind 127.0.0.1:${port}
  default_backend fleet
backend fleet
  balance leastconn
${upstreams.map((p, i) => `  server s${i} 127.0.0.1:${p} maxconn 9000`).join('\n')}
`;
}

export interface Peer {
  name: 'nginx' | 'haproxy';
  port: number;
  proc: Proc;
  /** The process that serves requests (nginx's worker, haproxy itself), for CPU readings. */
  workerPid(): number;
}

export async function startNginx(group: ProcessGroup, port: number, upstreams: number[]): Promise<Peer> {
  const dir = path.join(group.dir, 'nginx');
  mkdirSync(dir, { recursive: true });
  const conf = path.join(dir, 'nginx.conf');
  writeFileSync(conf, nginxConfig(dir, port, upstreams));
  const proc = group.spawn('nginx', 'nginx', ['-p', dir, '-e', path.join(dir, 'nginx-error.log'), '-c', conf]);
  await group.waitForPort(proc, port, 10_000);
  return { name: 'nginx', port, proc, workerPid: () => firstChild(proc.pid) };
}

export async function startHaproxy(group: ProcessGroup, port: number, upstreams: number[]): Promise<Peer> {
  const dir = path.join(group.dir, 'haproxy');
  mkdirSync(dir, { recursive: true });
  const conf = path.join(dir, 'haproxy.cfg');
  writeFileSync(conf, haproxyConfig(dir, port, upstreams));
  const proc = group.spawn('haproxy', 'haproxy', ['-db', '-f', conf]);
  await group.waitForPort(proc, port, 10_000);
  return { name: 'haproxy', port, proc, workerPid: () => proc.pid };
}

function firstChild(pid: number): number {
  try {
    const kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    return kids[0] ?? pid;
  } catch {
    return pid;
  }
}
