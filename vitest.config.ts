import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // test/flood/ measures a real process under load: a step of its own after this suite (its own config).
    exclude: [...configDefaults.exclude, 'test/flood/**'],
    // Tests never wait on timers; a generous timeout only guards against a hung child process.
    testTimeout: 60_000,
    reporters: ['default'],
  },
});
