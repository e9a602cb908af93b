// The engine simulator lives in the tooling (hack/lib/engine-simulator.ts), which the demo shares with
// the tests; tooling never imports test/ (docs/adr/0052), so the tests take it from there.
export * from '../../hack/lib/engine-simulator.ts';
