// The flags Node runs the operator with, wherever it runs: the image's entrypoint (hack/images/build.ts,
// and the Dockerfile, checked by hack/bundle.test.ts), the tests' operator process, the bench and the
// demo. Kept here so all of them measure and run the same process.
//
// Why (ADR 0022; the measurements: docs/performance.md, "The figures behind choices in the code"): the
// informers' initial lists allocate page after page of short-lived JSON; with V8's defaults the young
// generation grows to 16 MiB semi-spaces and the old generation's limit to several times the live objects,
// and that committed memory stays resident for the life of the process.
// - --max-semi-space-size=4 (MiB): a young generation a quarter the size.
// - --heap-growing-percent=50: the old generation may grow to 1.5× what the last full GC kept, instead of
//   V8's dynamic factor (up to 4×), for a slightly slower start and the same idle CPU.
// `--optimize-for-size` saves more memory but costs far more CPU and start-up time: not taken.
export const OPERATOR_NODE_FLAGS: readonly string[] = [
  '--max-semi-space-size=4',
  '--heap-growing-percent=50',
];

/** The operator's node command line after the node binary: the flags, then the entry point. */
export const operatorNodeArgs = (main = 'operator/src/main.ts'): string[] => [...OPERATOR_NODE_FLAGS, main];
