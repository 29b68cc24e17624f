// test/flood/ runs on its own, after the main suite (make test, make test-flood): it times decisions
// against a real service process while hostile uploads arrive, and needs the machine's cores to itself.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('../..', import.meta.url)),
    include: ['test/flood/**/*.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 300_000,
    fileParallelism: false,
    reporters: ['default'],
  },
});
