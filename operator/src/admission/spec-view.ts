// The narrowed Operation spec the admission checks read (readOperationSpec in spec-checks.ts makes it),
// apart from those checks so that parameters-from.ts and source.ts, which spec-checks.ts calls, take it
// without importing them back.
import type { Engine, OperationType } from '../api/enums.ts';
import type { ParameterSource } from '../api/parameters-from.ts';

/** The fields of an Operation spec (or operationTemplate spec) that the checks read, once narrowed. */
export interface OperationSpecView {
  type?: OperationType;
  engine?: Engine;
  targetName?: string;
  template?: string;
  parameters?: Record<string, unknown>;
  /** Operation only: spec.parametersFrom, once narrowed (the schedulers' operationTemplate has none). */
  parametersFrom?: ParameterSource[];
  /** Operation only: spec.source (a Restore from a namespace's backups; the target may be absent). */
  source?: { namespace: string };
  policy?: Record<string, unknown>;
}
