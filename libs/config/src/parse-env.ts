import type { ZodType, ZodTypeDef } from 'zod';

/** Parses an app's environment once at start; a bad value throws a message naming the variable. */
export function parseEnv<T>(schema: ZodType<T, ZodTypeDef, unknown>, env: NodeJS.ProcessEnv): T {
  const r = schema.safeParse(env);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new Error(`invalid configuration: ${issue.path.join('.')}: ${issue.message}`);
  }
  return r.data;
}
