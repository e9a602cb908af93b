import { defineConfig } from 'vitest/config';

// Three projects: `unit` is pure code (fast, no I/O); `integration` runs against a real
// kube-apiserver + etcd started once by the global setup (test/integration/setup.ts); `e2e` runs the
// user journeys (OLM on a kwok cluster, image mirroring), each file bringing up what it needs.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          // bench/: only the pure helpers' tests; the benchmarks themselves run with `make bench`.
          include: [
            'packages/*/src/**/*.test.ts',
            'operator/**/*.test.ts',
            'hack/**/*.test.ts',
            'bench/lib/**/*.test.ts',
          ],
          environment: 'node',
          // Not vitest's 5 s: the property tests check hundreds of cases against brute-force references,
          // and beside the other streams on 2 cores one took 6 s (a cold run). A hung test still fails.
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/integration/setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // One API server is shared; files run one after another to keep the 2-core machine calm.
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          environment: 'node',
          testTimeout: 600_000,
          hookTimeout: 600_000,
          // Each journey starts its own cluster or registries; one at a time on 2 cores.
          fileParallelism: false,
        },
      },
    ],
  },
});
