import { z } from 'zod';
import { instanceIdLookupSchema } from './instance';

export const INFLIGHT_REJECTED_MESSAGE =
  'inflight: not accepted in heartbeats; in-flight requests are counted by the proxies';

/** A heartbeat reports what only the instance can measure; in-flight is the proxies' to count. */
export const heartbeatSchema = z
  .object({
    qps_1m: z.number().finite().min(0).optional(),
    gpu_util: z.number().finite().min(0).max(100).optional(),
  })
  .strict();

export type Heartbeat = z.infer<typeof heartbeatSchema>;

/** Heartbeat of the original proxy's agents: instance id in the body, and an `inflight` we ignore. */
export const legacyHeartbeatSchema = z
  .object({
    instance_id: instanceIdLookupSchema,
    qps_1m: z.number().finite().min(0).optional(),
    gpu_util: z.number().finite().min(0).max(100).optional(),
    inflight: z.unknown().optional(),
  })
  .strict();
