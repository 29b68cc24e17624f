// Cooperative slicing: long pure computations are written as generators that yield between small
// steps; a Slicer drives them and gives the event loop back whenever a time budget is spent, so
// decisions and bundle polls are answered in between. Without a slicer they run straight through.

/** Gives the event loop back when `budgetMs` of work has run since the last time. */
export interface Slicer {
  /** Call often: yields (resolves after pending I/O callbacks ran) when the budget is spent. */
  pause(): Promise<void> | undefined;
}

/** Work between two yields to the event loop: a decision arriving meanwhile waits at most about this. */
export const SLICE_BUDGET_MS = 4;

const nextTurn = (): Promise<void> =>
  new Promise((resolve) => {
    setImmediate(resolve);
  });

export function createSlicer(budgetMs = SLICE_BUDGET_MS): Slicer {
  let since = performance.now();
  return {
    pause() {
      if (performance.now() - since < budgetMs) return undefined;
      return nextTurn().then(() => {
        since = performance.now();
      });
    },
  };
}

/** A slicer that never yields: the same work, straight through (tests, offline commands). */
export const UNSLICED: Slicer = { pause: () => undefined };

/** Runs a generator to its end, yielding to the event loop through `slicer` between its steps. */
export async function drive<T>(steps: Generator<unknown, T>, slicer: Slicer): Promise<T> {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    const paused = slicer.pause();
    if (paused) await paused;
  }
}
