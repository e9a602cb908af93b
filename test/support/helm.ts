// The helm CLI runner and the tiny chart live in the tooling (hack/lib/helm.ts), which the demo shares
// with the tests; tooling never imports test/ (docs/adr/0052), so the tests take them from there.
export * from '../../hack/lib/helm.ts';
