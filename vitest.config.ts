import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Tests never wait on timers; a generous timeout only guards against a hung child process.
    testTimeout: 60_000,
    reporters: ['default'],
  },
});
