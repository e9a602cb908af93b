// Which imports the repository allows, checked by dependency-cruiser (`npm run check:imports`, one check
// of `make test` and `make lint`). The layer table below is the written rule: docs/architecture.md shows
// the same table, and the `forbidden` rules are built from it, so the two cannot drift apart.
// There is no baseline of known violations: every import obeys the table (ADR 0039 says why this tool,
// ADR 0044 how the last up-layer imports went).

const SRC = '^operator/src/';
// operator/src's unit tests, and where test seams must not be (test/support holds them).
const UNIT_TESTS = `${SRC}.+[.]test[.]ts$`;
const TEST_SEAMS = `${SRC}(testing|.*/testing)[.]ts$`;
// The operator package's entry points (operator/package.json `exports`): all that hack/ and bench/ may
// import of it (ADR 0052).
const OPERATOR_ENTRY_POINTS = `${SRC}public/(index|api|packaging|cli)[.]ts$`;

/**
 * The layers of operator/src, lowest first. `files` are regular expressions for paths under
 * operator/src/ (a folder, or a top-level file with its test). A file may import its own layer and the
 * layers in `mayImport`; tests follow the layer of the folder they are in (their seams live in test/support).
 */
const LAYERS = [
  {
    name: 'runtime',
    // The runtime is a package of its own (packages/runtime, imported as @vworkspace/runtime).
    files: ['^packages/runtime/'],
    holds: 'informers, controllers, REST client, kubeconfig',
    mayImport: [],
  },
  { name: 'api', files: ['api/'], holds: 'types, schemas, constants, accessors', mayImport: [] },
  {
    name: 'time',
    files: ['time/'],
    holds: 'time zones, cron expressions, durations, maintenance windows',
    mayImport: [],
  },
  {
    name: 'release',
    files: ['release/'],
    holds: 'Helm release records, which release an instance names, who claims it',
    mayImport: ['api'],
  },
  {
    name: 'identity',
    files: ['identity/'],
    holds: 'stamps, signing key, acts-for',
    mayImport: ['api', 'runtime'],
  },
  {
    name: 'rbac',
    files: ['rbac/'],
    holds: 'profiles, ClusterRoles, operator rules',
    mayImport: ['api', 'catalog', 'runtime'],
  },
  {
    name: 'catalog',
    files: ['catalog/'],
    holds: 'templates, catalog model, selectors, store',
    mayImport: ['api', 'time', 'runtime'],
  },
  {
    name: 'engines',
    files: ['engines/'],
    holds: 'engine adapters',
    mayImport: ['api', 'time', 'release', 'catalog'],
  },
  {
    name: 'indexes',
    files: ['indexes(\\.test)?\\.ts$'],
    holds: 'cache indexes shared by controllers',
    mayImport: ['api', 'release', 'runtime'],
  },
  {
    name: 'operation',
    files: ['operation/'],
    holds: 'Operation decisions and controller',
    mayImport: ['api', 'time', 'release', 'identity', 'rbac', 'catalog', 'engines', 'indexes', 'runtime'],
  },
  {
    name: 'schedule',
    files: ['schedule/'],
    holds: 'CronOperation/WatchOperation decisions and controllers',
    mayImport: ['api', 'time', 'identity', 'catalog', 'indexes', 'runtime'],
  },
  {
    name: 'instance',
    files: ['instance/'],
    holds: 'ApplicationInstance status, capabilities and controller',
    mayImport: ['api', 'time', 'release', 'catalog', 'indexes', 'schedule', 'runtime'],
  },
  {
    name: 'admission',
    files: ['admission/'],
    holds: 'webhook decisions and server',
    mayImport: ['api', 'time', 'identity', 'rbac', 'catalog', 'engines', 'operation', 'schedule', 'runtime'],
  },
  {
    name: 'wiring',
    files: ['cli/', 'config(\\.test)?\\.ts$', 'node-flags(\\.test)?\\.ts$', 'main(\\.test)?\\.ts$'],
    holds: 'main, configuration, kubectl-vws',
    mayImport: ['*'],
  },
  {
    name: 'public',
    files: ['public/'],
    holds: "the package's entry points (operator/package.json exports), for tooling",
    mayImport: ['*'],
  },
];

const byName = new Map(LAYERS.map((l) => [l.name, l]));
// A layer's files are paths under operator/src/, or whole paths when they start with ^.
const pathsOf = (layers) =>
  `(${layers
    .flatMap((l) => l.files)
    .map((f) => (f.startsWith('^') ? f : `${SRC}${f}`))
    .join('|')})`;

const layerRules = LAYERS.filter((l) => !l.mayImport.includes('*')).map((l) => ({
  name: `layer-${l.name}`,
  comment: `${l.name} (${l.holds}) imports ${
    l.mayImport.length ? `only ${l.mayImport.join(', ')}` : 'nothing else'
  } of operator/src: see the layer table in docs/architecture.md`,
  severity: 'error',
  from: { path: pathsOf([l]) },
  to: {
    path: `(${SRC}|^packages/runtime/)`,
    pathNot: pathsOf([l, ...l.mayImport.map((n) => byName.get(n))]),
  },
}));

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'not-in-a-layer',
      comment:
        'every file of operator/src belongs to a layer: add its folder or file to LAYERS in .dependency-cruiser.cjs',
      severity: 'error',
      from: { path: SRC, pathNot: pathsOf(LAYERS) },
      to: {},
    },
    {
      name: 'runtime-public-entry-points',
      comment:
        'outside packages/runtime, the runtime is imported as @vworkspace/runtime (or @vworkspace/runtime/testing), never by a file of its own',
      severity: 'error',
      from: { pathNot: '^packages/runtime/' },
      to: { path: '^packages/runtime/', pathNot: '^packages/runtime/src/(index|testing)[.]ts$' },
    },
    {
      name: 'runtime-imports-nothing-of-the-repository',
      comment: 'packages/runtime stands alone: it imports nothing of operator/, hack/, bench/ or test/',
      severity: 'error',
      from: { path: '^packages/runtime/' },
      to: { path: '^(operator|hack|bench|test)/' },
    },
    {
      name: 'entry-points-are-for-outside',
      comment:
        'operator/src/public/ re-exports for hack/ and bench/; the product imports the file that holds a thing, never an entry point',
      severity: 'error',
      from: { path: SRC, pathNot: `${SRC}public/` },
      to: { path: `${SRC}public/` },
    },
    {
      name: 'tooling-imports-operator-entry-points',
      comment:
        'hack/ and bench/ import the operator only as @vworkspace/operator, /api, /packaging or /cli (operator/package.json exports): export what is missing from operator/src/public/',
      severity: 'error',
      from: { path: '^(hack|bench)/' },
      to: { path: '^operator/', pathNot: OPERATOR_ENTRY_POINTS },
    },
    {
      name: 'tooling-imports-operator-as-a-package',
      comment:
        'hack/ and bench/ import the operator by its package name (@vworkspace/operator/…), never by a relative path, not even to an entry point',
      severity: 'error',
      from: { path: '^(hack|bench)/' },
      // A relative import is `local` alone; one through the package is also `aliased` (from the root
      // package: `aliased-workspace` and `local` as well), so `aliased` tells them apart.
      to: { path: '^operator/', dependencyTypes: ['local'], dependencyTypesNot: ['aliased'] },
    },
    {
      name: 'tooling-imports-no-tests',
      comment:
        'hack/ imports nothing under test/: what the tooling shares with the tests (eventually, helm, the engine simulator) lives in hack/lib, and test/support takes it from there',
      severity: 'error',
      from: { path: '^hack/' },
      to: { path: '^test/' },
    },
    {
      name: 'product-imports-no-tooling',
      comment:
        'operator/src imports nothing under hack/, bench/ or test/ (tooling imports the product, never back); only its unit tests may import test/support',
      severity: 'error',
      from: { path: SRC, pathNot: UNIT_TESTS },
      to: { path: '^(hack|bench|test)/' },
    },
    {
      name: 'unit-tests-import-only-test-support',
      comment:
        'a unit test in operator/src imports its test seams from test/support, nothing else under hack/, bench/ or test/',
      severity: 'error',
      from: { path: UNIT_TESTS },
      to: { path: '^(hack|bench|test)/', pathNot: '^test/support/' },
    },
    {
      name: 'no-test-seams-in-product',
      comment:
        "test seams (builders, fakes) live in test/support or a package's testing entry point, never as a testing.ts in operator/src",
      severity: 'error',
      from: { path: TEST_SEAMS },
      to: {},
    },
    {
      name: 'no-test-seams-in-product-orphan',
      comment:
        "test seams (builders, fakes) live in test/support or a package's testing entry point, never as a testing.ts in operator/src",
      severity: 'error',
      from: { path: TEST_SEAMS, orphan: true },
      to: {},
    },
    {
      name: 'no-circular',
      comment:
        'no import cycles between files (type-only imports count): move the shared piece to a file both import',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    // Type-only imports are edges too: a type that runs back up a layer is as much a tangle as a value.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    // The workspace package resolves through its package.json exports to its sources (the symlink under
    // node_modules is followed to packages/runtime), so its imports are checked like any other.
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'default'] },
  },
};
