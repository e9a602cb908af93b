// The controller runtime: what the rest of the operator imports. See docs/runtime.md.

export * from './backoff.ts';
export * from './clock.ts';
export * from './conditions.ts';
export * from './controller.ts';
export * from './event-loop.ts';
export * from './events.ts';
export * from './health.ts';
export * from './indexer.ts';
export * from './informer.ts';
export * from './informer-factory.ts';
export * from './keyed-mutex.ts';
export * from './keys.ts';
export * from './kube-client.ts';
export * from './kubeconfig.ts';
export * from './leader-election.ts';
export * from './lister-watcher.ts';
export * from './logger.ts';
export * from './manager.ts';
export * from './metadata.ts';
export * from './metrics.ts';
export * from './multi-namespace.ts';
export * from './normalize.ts';
export * from './rate-limiter.ts';
export * from './status.ts';
export * from './workqueue.ts';
