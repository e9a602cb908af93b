// The two calls an informer makes (list, then watch from the list's resourceVersion), apart from the
// informer (informer.ts) so that wrappers of a ListerWatcher (multi-namespace.ts, metadata.ts, test
// fakes) need only its shape.

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
}

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
}

export interface WatchOptions extends ListOptions {
  resourceVersion: string;
  allowWatchBookmarks: boolean;
  timeoutSeconds: number;
}

/**
 * The two calls an informer makes; `kubeListerWatcher` is the real one, tests use fakes. The informer
 * takes ownership of every object it receives (it normalises and freezes them in place): hand it
 * objects nobody else keeps, e.g. freshly parsed JSON.
 */
export interface ListerWatcher<T> {
  list(opts: ListOptions, signal: AbortSignal): Promise<ListResult<T>>;
  /**
   * Streams events to `onEvent` until the watch ends: resolves when it ends cleanly (server
   * timeout, client inactivity timeout, abort through `signal`), rejects on any failure.
   */
  watch(
    opts: WatchOptions,
    onEvent: (type: string, obj: unknown) => void,
    signal: AbortSignal,
  ): Promise<void>;
}
