import { ConfigFile, parseSettings } from '@switchyard/config';
import { z } from 'zod';

const num = (d: number, min = 0) => z.coerce.number().finite().min(min).default(d);
const bool = (d: boolean) =>
  z
    .enum(['true', 'false', '1', '0'], { errorMap: () => ({ message: 'must be true or false' }) })
    .default(d ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1');

const schema = z.object({
  PORT: z.coerce.number().int().min(1).max(65535).default(9001),
  HOST: z.string().min(1).default('127.0.0.1'),
  MODEL: z.string().min(1).default('sim-llama'),
  MAX_BATCH: z.coerce.number().int().min(1).max(4096).default(8),
  TTFT_BASE_MS: num(30),
  TTFT_PER_PROMPT_TOKEN_MS: num(0.05),
  TOKEN_MS: num(10),
  TOKEN_MS_PER_BATCH: num(2),
  DEFAULT_MAX_TOKENS: z.coerce.number().int().min(1).default(16),
  ANSWER_TOKENS: z.coerce.number().int().min(1).optional(),
  KV_CACHE_TOKENS: z.coerce.number().int().min(1).default(65536),
  MAX_MODEL_LEN: z.coerce.number().int().min(1).default(8192),
  EMBEDDING_DIM: z.coerce.number().int().min(1).max(8192).default(8),
  CONTROL_PLANE_URL: z.string().url().optional(),
  ADMIN_TOKEN: z.string().min(1).optional(),
  INSTANCE_ID: z.string().min(1).optional(),
  ADVERTISE_URL: z.string().url().optional(),
  SIM_HEARTBEAT: bool(true),
  REGISTER_RETRY_MAX_S: z.coerce.number().finite().min(0.1).max(3600).default(10),
});

export type SimConfig = z.infer<typeof schema>;

/** The environment over the config file's `sim` section. */
export function loadSimConfig(env: NodeJS.ProcessEnv = process.env, file?: ConfigFile): SimConfig {
  return parseSettings(schema, env, file, ['sim']);
}
