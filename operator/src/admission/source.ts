// spec.source of a Restore (docs/disaster-recovery.md, ADR 0035): which namespace's backups it restores.
// Its own namespace (recreated after it was deleted, the ApplicationInstance gone) needs nothing beyond
// the `restore` verb on the target that every Restore needs. Another namespace is a clone: the backup
// holds that namespace's data (the release's Secrets among it), so the requester must pass a
// SubjectAccessReview for the verb `clone` on the ApplicationInstance of that name THERE, and the template
// must allow clones (allowClone). The velero engine is the one that reads it. Pure.
import { cloneDenial, type Template } from '../catalog/index.ts';
import { type AccessCheck, type Facts, forbidden, invalid, type Problem } from './decision.ts';
import { checkAccess } from './spec-checks.ts';
import type { OperationSpecView } from './spec-view.ts';

/** The verb that lets a requester restore an instance's backups into another namespace. */
export const CLONE_VERB = 'clone';

/** The review a clone needs, in the source namespace; undefined when spec.source is not a clone. */
export function cloneCheck(view: OperationSpecView, namespace: string): AccessCheck | undefined {
  const source = view.source?.namespace;
  if (source === undefined || source === namespace || view.targetName === undefined) return undefined;
  return { verb: CLONE_VERB, name: view.targetName, namespace: source };
}

export function checkSource(
  view: OperationSpecView,
  template: Template | undefined,
  namespace: string,
  user: string,
  facts: Pick<Facts, 'access'>,
): Problem[] {
  if (!view.source) return [];
  const field = 'spec.source.namespace';
  if (view.type !== 'Restore') {
    return [
      invalid(
        'spec.source',
        'Forbidden: spec.source is for a Restore only: leave it out',
        'FieldValueForbidden',
      ),
    ];
  }
  if (view.engine !== undefined && view.engine !== 'velero') {
    return [
      invalid(
        'spec.source',
        `Forbidden: engine ${view.engine} restores only this namespace's own data of an existing instance; spec.source (another namespace's backups, or an instance that is gone) needs engine velero`,
        'FieldValueForbidden',
      ),
    ];
  }
  const check = cloneCheck(view, namespace);
  if (!check || !template) return [];
  const denial = cloneDenial(template, view.source.namespace, namespace);
  if (denial) return [forbidden(field, `Forbidden: ${denial}`)];
  return checkAccess(
    check,
    user,
    view.source.namespace,
    field,
    `restoring ${view.source.namespace}'s backups of ${view.targetName} into ${namespace} (a clone: it copies that namespace's data)`,
    facts,
  );
}
