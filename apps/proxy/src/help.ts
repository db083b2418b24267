import type { ServerHelp } from '@switchyard/entry-point';
import { loadProxyConfig } from '@switchyard/proxy-core';

export const proxyHelp = (): ServerHelp => ({
  command: 'node dist/apps/proxy/src/main.js',
  summary: 'switchyard proxy: the stateless data plane; OpenAI routes forwarded to the least-loaded instance, counts shared in Redis',
  defaults: loadProxyConfig({}),
  variables: [
    { name: 'PORT', meaning: 'listen port' },
    { name: 'HOST', meaning: 'listen address (0.0.0.0 in the container)' },
    { name: 'REDIS_URL', meaning: 'the shared store' },
    { name: 'REDIS_CLUSTER', meaning: "true: REDIS_URL is a seed node of a Redis Cluster; each request goes to its model's pool" },
    { name: 'ROUTING_STRATEGY', meaning: 'least_load, round_robin, random or power_of_two' },
    { name: 'MAX_BODY_BYTES', meaning: 'larger request bodies get 413' },
    { name: 'UPSTREAM_TIMEOUT_S', meaning: 'headers/body timeout to the instance (504)' },
    { name: 'REQUEST_BODY_TIMEOUT_S', meaning: 'a request body not received within this gets 408' },
    { name: 'WORKERS', meaning: 'proxy worker processes on the one port (node:cluster), each its own proxy id and lease; auto = one per CPU' },
    { name: 'MAX_RETRIES', meaning: 'other instances tried after a refused connection or a 502/503 before the first byte' },
    { name: 'FAILURE_COOLDOWN_S', meaning: 'an instance that refused a connection is skipped this long' },
    { name: 'LEASE_TTL_S', meaning: 'proxy lease length; renewed every second' },
    { name: 'REGISTRY_RESYNC_S', meaning: 'how often the registry snapshot is pulled from Redis' },
    { name: 'RECONCILE_S', meaning: 'how often the proxy rewrites its shared contribution from its own counts' },
    { name: 'PROXY_NAME', meaning: 'the proxy id is NAME@start-time' },
    { name: 'LOG_LEVEL', meaning: 'fatal, error, warn, info, debug, trace or silent (JSON logs)' },
    { name: 'QUEUE_MAX', meaning: 'requests that may wait for capacity (more: 429); 0 turns the queue off' },
    { name: 'QUEUE_TIMEOUT_S', meaning: 'longest wait in that queue (then 503)' },
    { name: 'DRAIN_SETTLE_S', meaning: 'after SIGTERM, how long /readyz says draining while the proxy still accepts' },
    { name: 'DRAIN_TIMEOUT_S', meaning: 'how long a drain waits for open exchanges before ending them' },
    { name: 'TERMINATION_GRACE_S', meaning: "the orchestrator's grace period; start-up warns when settle + drain does not fit" },
    { name: 'FORWARD_CLIENT_AUTH', meaning: "true: the client's Authorization and Cookie reach instances (and instances' Set-Cookie reach clients); an instance's own api_key still replaces Authorization" },
    { name: 'CORS_ORIGINS', meaning: "browser origins allowed (comma-separated scheme://host[:port], or *); empty: no CORS headers, preflights 404" },
    { name: 'SWITCHYARD_CONFIG', meaning: 'config file path (or --config FILE)' },
  ],
});
