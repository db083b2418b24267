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
    { name: 'ANSWER_TOKENS', meaning: 'natural answer length (finish_reason stop); unset: answers run to max_tokens' },
    { name: 'KV_CACHE_TOKENS', meaning: 'KV-cache size in tokens, for vllm:kv_cache_usage_perc on /metrics' },
    { name: 'MAX_MODEL_LEN', meaning: 'max_model_len in /v1/models' },
    { name: 'EMBEDDING_DIM', meaning: 'embedding length when the request gives no dimensions' },
    { name: 'SIM_HEARTBEAT', meaning: "false: register without heartbeats, kept alive by the control plane's probes" },
    { name: 'REGISTER_RETRY_MAX_S', meaning: 'longest wait between registration attempts' },
    { name: 'CONTROL_PLANE_URL', meaning: 'register and heartbeat there when set (retried until the control plane answers)' },
    { name: 'ADMIN_TOKEN', meaning: 'bearer token for the control plane' },
    { name: 'INSTANCE_ID', meaning: 'id to register under (default: derived from the URL)' },
    { name: 'ADVERTISE_URL', meaning: 'URL to register (default: http://HOST:PORT)' },
    { name: 'SWITCHYARD_CONFIG', meaning: 'config file path (or --config FILE)' },
  ],
});
