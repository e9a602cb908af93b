import { defineConfig } from 'vitest/config';

// Two projects: `unit` is pure code (fast, no I/O); `integration` runs against a real
// kube-apiserver + etcd started once by the global setup (test/integration/setup.ts).
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['operator/**/*.test.ts', 'hack/**/*.test.ts'],
          environment: 'node',
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
    ],
  },
});
