// What a `kubectl vws` command names (`cronoperation/nightly`), apart from the parser (args.ts) so that
// the request builders (requests.ts) take it without importing the parser that imports them.

export type ObjectKind =
  | 'operation'
  | 'cronoperation'
  | 'watchoperation'
  | 'applicationinstance'
  | 'template';

export interface ObjectRef {
  kind: ObjectKind;
  name: string;
}
