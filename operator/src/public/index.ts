// `@vworkspace/operator`: what a program needs to run the operator as its own process (the demo, the
// bench, the tests' operator process, the image recipe): Node's flags and the entry point, so every one
// of them starts the same process the image's ENTRYPOINT starts.
export { OPERATOR_NODE_FLAGS, operatorNodeArgs } from '../node-flags.ts';
