import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // test/timing asserts latency bounds: it runs alone, after everything else (vitest.timing.config.ts).
    exclude: [...configDefaults.exclude, 'test/timing/**', 'test/cluster/**'],
    // Tests never wait on timers; a generous timeout only guards against a hung child process. Hooks
    // too: vitest's default of 10 s failed test/opa/configs.test.ts's beforeAll (a TLS service on
    // examples/) on a loaded machine, though nothing in it hung.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
