export type StopSignal = 'SIGTERM' | 'SIGINT';

export interface StopSignalOptions {
  /** Runs once, on the first SIGTERM or SIGINT; the process exits 0 when it resolves, 1 when it fails. */
  stop: (signal: StopSignal) => Promise<void>;
  /** Sees every signal, the first included (`repeated` false), e.g. to cut a drain's settle window short. */
  onSignal?: (signal: StopSignal, repeated: boolean) => void;
  /** Where a failed stop is reported (a JSON logger in the servers). */
  onError: (err: unknown) => void;
}

/**
 * SIGTERM and SIGINT handled by node itself in every server: the image runs `node dist/…` as
 * PID 1 (no npm in between), so the orchestrator's signal reaches this handler and the
 * process exits only once its stop has finished.
 */
export function onStopSignals(options: StopSignalOptions): void {
  let stopping = false;
  const handle = (signal: StopSignal) => {
    options.onSignal?.(signal, stopping);
    if (stopping) return;
    stopping = true;
    options.stop(signal).then(
      () => process.exit(0),
      (err: unknown) => {
        options.onError(err);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handle);
  process.on('SIGINT', handle);
}
