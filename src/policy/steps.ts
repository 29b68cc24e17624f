// Long pure computations here are generators that yield between small steps, so a caller can give
// the event loop back between them (src/work/slice.ts); this runs one straight through.

/** Runs steps to their end at once and returns the result. */
export function runSteps<T>(steps: Generator<unknown, T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}
