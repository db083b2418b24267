export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Polls until `cond` holds or `ms` pass, and says which: for eventual conditions
 * (a count released, a lease reaped), never for timing. A throwing check counts as false.
 */
export async function waitFor(cond: () => boolean | Promise<boolean>, ms = 10_000, intervalMs = 25): Promise<boolean> {
  const end = Date.now() + ms;
  const check = async () => {
    try {
      return await cond();
    } catch {
      return false;
    }
  };
  while (Date.now() < end) {
    if (await check()) return true;
    await sleep(intervalMs);
  }
  return check();
}
