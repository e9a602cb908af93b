// The flags Node runs the operator with, wherever it runs: the image's entrypoint (hack/images/build.ts,
// and the Dockerfile, checked by hack/bundle.test.ts), the tests' operator process, the bench and the
// demo. Kept here so all of them measure and run the same process.
//
// Measured with bench footprint at 10k ApplicationInstances + 10k finished Operations, idle
// (docs/performance.md, ADR 0022). The informers' initial lists allocate page after page of short-lived
// JSON; with V8's defaults the young generation grows to 16 MiB semi-spaces and the old generation's limit
// to several times the live objects, and that committed memory stays resident for the life of the process
// (347 MiB resident with about 60 MiB of live JS objects).
// - --max-semi-space-size=4 (MiB): a young generation a quarter the size. Alone: 260 MiB.
// - --heap-growing-percent=50: the old generation may grow to 1.5× what the last full GC kept, instead of
//   V8's dynamic factor (up to 4×). With both: 232 MiB, idle CPU unchanged (4.2 vs 3.5 millicores, the
//   peer 8.8), start to every object reconciled 7.0 s instead of 5.2 s.
// `--optimize-for-size` reached 173 MiB but cost 2.5× the CPU to fill the cache, 3× idle CPU and 60 %
// longer startup: not taken.
export const OPERATOR_NODE_FLAGS: readonly string[] = [
  '--max-semi-space-size=4',
  '--heap-growing-percent=50',
];

/** The operator's node command line after the node binary: the flags, then the entry point. */
export const operatorNodeArgs = (main = 'operator/src/main.ts'): string[] => [...OPERATOR_NODE_FLAGS, main];
