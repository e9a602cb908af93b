// The API of the operator: types, CRD schemas, names and vocabularies. Import from here.
import { applicationInstanceKind } from './applicationinstance.ts';
import type { KindDefinition } from './crd.ts';
import { cronOperationKind } from './cronoperation.ts';
import { operationKind } from './operation.ts';
import { watchOperationKind } from './watchoperation.ts';

export * from './annotations.ts';
export * from './applicationinstance.ts';
export * from './catch-up.ts';
export * from './constants.ts';
export * from './cronoperation.ts';
export * from './enums.ts';
export * from './operation.ts';
export * from './operation-template.ts';
export * from './parameters-from.ts';
export * from './reasons.ts';
export * from './retention.ts';
export * from './rollout.ts';
export type { Condition } from './schema-helpers.ts';
export * from './velero-requests.ts';
export * from './watchoperation.ts';

/** Every kind the project owns, in a stable order (CRD generation, docs, RBAC). */
export const ALL_KINDS: readonly KindDefinition[] = [
  applicationInstanceKind,
  operationKind,
  cronOperationKind,
  watchOperationKind,
];
