import type { ZodType, ZodTypeDef } from 'zod';

/**
 * Parses an app's environment once at start; a bad value throws a message naming the variable.
 * An empty variable means unset (compose and Kubernetes pass `VAR=""` for "not given").
 */
export function parseEnv<T>(schema: ZodType<T, ZodTypeDef, unknown>, env: NodeJS.ProcessEnv): T {
  const given = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ''));
  const r = schema.safeParse(given);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new Error(`invalid configuration: ${issue.path.join('.')}: ${issue.message}`);
  }
  return r.data;
}

/** Runs an app's config loader at start; a bad value prints its message and exits 2, with no stack trace. */
export function configOrExit<T>(load: () => T): T {
  try {
    return load();
  } catch (err) {
    console.error((err as Error).message);
    process.exit(2);
  }
}
