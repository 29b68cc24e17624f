// After an action writes, the console waits for the controller to act on it (the next publish that
// makes `done` true), so the page that follows tells the truth: a token shown is the token served, an
// Inactive connector already answers 403. It waits on publishes, never on a timer loop; the timeout
// only ends the wait and says so.
import type { Store } from '../store/index.ts';

export const ACTION_TIMEOUT_MS = 20_000;

/** Resolves true once `done()` holds (checked now and after every publish), false after `timeoutMs`. */
export function waitForPublish(store: Store, done: () => boolean, timeoutMs: number): Promise<boolean> {
  if (done()) return Promise.resolve(true);
  return new Promise((resolve) => {
    const finish = (ok: boolean): void => {
      clearTimeout(timer);
      unsubscribe();
      resolve(ok);
    };
    const unsubscribe = store.onBundleChange(() => {
      if (done()) finish(true);
    });
    const timer = setTimeout(() => finish(false), timeoutMs);
    timer.unref();
  });
}
