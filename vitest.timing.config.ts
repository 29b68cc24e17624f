// test/timing: the tests whose contract is a latency bound (an edit applied within the settle interval
// plus 200 ms, decisions under 50 ms while hostile uploads arrive). `make test` runs them alone, one file
// at a time, after the rest of the suite: another test file's load on the same cores is not what they measure.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/timing/**/*.test.ts'],
    fileParallelism: false,
    testTimeout: 300_000,
    hookTimeout: 300_000,
    reporters: ['default'],
  },
});
