// test/cluster: acl-operator in real pods on a cluster that runs them (make test-cluster, with
// CLUSTER_KUBECONFIG). One file, its steps in order, minutes long: never part of make test.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/cluster/**/*.test.ts'],
    fileParallelism: false,
    testTimeout: 900_000,
    hookTimeout: 900_000,
    bail: 1,
    reporters: ['default'],
  },
});
