import type { ServerHelp } from '@switchyard/entry-point';
import { loadSimConfig } from '@switchyard/sim';

export const simHelp = (): ServerHelp => ({
  command: 'node dist/apps/sim-instance/src/main.js',
  summary: 'switchyard sim instance: a simulated OpenAI-compatible model server (continuous batching, SSE), for tests and demos',
  defaults: loadSimConfig({}),
  variables: [
    { name: 'PORT', meaning: 'listen port' },
    { name: 'HOST', meaning: 'listen address (0.0.0.0 in the container)' },
    { name: 'MODEL', meaning: 'the model it serves' },
    { name: 'MAX_BATCH', meaning: 'sequences decoded at once; the rest queue' },
    { name: 'TTFT_BASE_MS', meaning: 'prefill time, fixed part' },
    { name: 'TTFT_PER_PROMPT_TOKEN_MS', meaning: 'prefill time per prompt token' },
    { name: 'TOKEN_MS', meaning: 'per-token delay' },
    { name: 'TOKEN_MS_PER_BATCH', meaning: 'extra per-token delay per extra sequence in the batch' },
    { name: 'DEFAULT_MAX_TOKENS', meaning: 'output length when the request gives none' },
    { name: 'CONTROL_PLANE_URL', meaning: 'register and heartbeat there when set (retried until the control plane answers)' },
    { name: 'ADMIN_TOKEN', meaning: 'bearer token for the control plane' },
    { name: 'INSTANCE_ID', meaning: 'id to register under (default: derived from the URL)' },
    { name: 'ADVERTISE_URL', meaning: 'URL to register (default: http://HOST:PORT)' },
  ],
});
