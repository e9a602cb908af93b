// The polling helper lives in the tooling (hack/lib/eventually.ts), which the demo shares with the tests;
// tooling never imports test/ (docs/adr/0052), so the tests take it from there.
export * from '../../hack/lib/eventually.ts';
