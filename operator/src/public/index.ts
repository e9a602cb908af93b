// `@vworkspace/operator`: what a program needs to run the operator as its own process (the demo, the
// bench, the tests' operator process, the image recipe): Node's flags and the entry point, so every one
// of them starts the same process the image's ENTRYPOINT starts.

// The webhook server's idle-connection timeout: the bench's null webhook serves with the same.
export { KEEP_ALIVE_TIMEOUT_MS } from '../admission/server.ts';
export { OPERATOR_NODE_FLAGS, operatorNodeArgs } from '../node-flags.ts';
