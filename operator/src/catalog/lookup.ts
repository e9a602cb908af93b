// A fact looked up for a decision (the catalog store's templates, the admission handler's reads): its
// value, or a transient failure. Here, below both, so the store needs nothing of admission.

/** A fact the handler looked up: its value, or a transient failure (the request is denied with "retry"). */
export type Lookup<T> = { ok: true; value: T } | { ok: false; message: string };
