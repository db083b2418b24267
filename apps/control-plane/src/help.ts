import type { ServerHelp } from '@switchyard/entry-point';
import { loadControlPlaneConfig } from './config';

const variables = [
  { name: 'PORT', meaning: 'listen port' },
  { name: 'HOST', meaning: 'listen address (0.0.0.0 in the container)' },
  { name: 'REDIS_URL', meaning: 'the shared store' },
  { name: 'REDIS_CLUSTER', meaning: 'true: REDIS_URL is a seed node of a Redis Cluster; each routing pool (registration pool) is one hash slot' },
  { name: 'ADMIN_TOKEN', meaning: 'bearer token (role admin) every admin and /debug route needs; required unless HOST is loopback' },
  { name: 'ADMIN_TOKENS', meaning: 'more tokens as name:role:token,… (role read: GETs and /debug; admin: changes too)' },
  { name: 'ALLOW_OPEN_ADMIN', meaning: 'true: start on a non-loopback HOST with no token (the admin API open to the network)' },
  { name: 'INSTANCE_TTL_S', meaning: 'an instance is alive while its last heartbeat or probe is this recent' },
  { name: 'LEASE_SWEEP_S', meaning: 'how often expired proxy leases are reaped' },
  { name: 'PROBE_INTERVAL_S', meaning: "how often one replica probes every instance's /health (else /v1/models) and reads its /metrics; two failures in a row take it out" },
  { name: 'PROBE_TIMEOUT_S', meaning: 'a probe or /metrics read that has not answered by then has failed' },
  { name: 'KV_CACHE_GUARD', meaning: 'an engine whose KV cache is at least this full (0..1) is chosen only when every candidate is; 1 turns it off' },
  { name: 'LOG_LEVEL', meaning: 'fatal, error, warn, info, debug, trace or silent (JSON logs)' },
  { name: 'LOG_TIME', meaning: 'log timestamps: epoch (ms since 1970) or iso (ISO 8601, UTC)' },
  { name: 'INSTANCES', meaning: "url,url: instances registered at start (models from their /v1/models) and probed; also the config file's instances: list" },
  { name: 'SWITCHYARD_CONFIG', meaning: 'config file path (or --config FILE)' },
];

export const controlPlaneHelp = (): ServerHelp => ({
  command: 'node dist/apps/control-plane/src/main.js',
  summary: 'switchyard control plane: the instance registry and admin API, liveness, lease reaper, debug view, dashboard',
  defaults: loadControlPlaneConfig({}),
  variables,
});

/** `npm start`: the control plane, a proxy and two sims in one process. */
export const singleProcessHelp = (): ServerHelp => ({
  command: 'node dist/apps/control-plane/src/single-process.js',
  summary: 'switchyard single process: control plane + proxy (+ two simulated instances) in one process, for a first run',
  defaults: { PORT: 8080, CONTROL_PLANE_PORT: 8081, SIM_BASE_PORT: 9001 },
  variables: [
    { name: 'PORT', meaning: "the proxy's port" },
    { name: 'CONTROL_PLANE_PORT', meaning: "the control plane's port" },
    { name: 'SIM_BASE_PORT', meaning: 'the two simulated instances take this port and the next' },
    { name: 'REDIS_URL', meaning: 'share counts through this Redis; unset: an in-memory store' },
    { name: 'INSTANCES', meaning: 'comma-separated instance URLs to register (and probe) instead of starting simulated ones' },
  ],
  notes: ['Every other variable of the control plane and the proxy applies too (see their --help).'],
});
