// Passes asked for while one runs collapse into one more pass after it: a reader of a folder, a
// writer of ConfigMaps, a poller of a Secret, each asked again and again by events, never runs two
// passes at once and never drops the last request.

/**
 * `run()` starts `pass` when none runs; asked while one runs, it returns that run, which then passes
 * once more. `more()` (default: always) can end the run early, e.g. once its owner stopped. A pass
 * that throws ends the run (the next request starts a new one) and rejects it.
 */
export function coalesce(pass: () => Promise<void>, more: () => boolean = () => true): () => Promise<void> {
  let running: Promise<void> | undefined;
  let again = false;
  return () => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          await pass();
        } while (again && more());
      } finally {
        running = undefined;
      }
    })();
    return running;
  };
}
