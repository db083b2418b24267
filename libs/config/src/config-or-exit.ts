/** Runs an app's config loader at start; a bad value prints its message and exits 2, with no stack trace. */
export function configOrExit<T>(load: () => T): T {
  try {
    return load();
  } catch (err) {
    console.error((err as Error).message);
    process.exit(2);
  }
}
