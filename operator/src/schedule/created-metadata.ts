// The metadata CronOperation and WatchOperation give the Operations they create: the template's labels and
// annotations, the scheduler's own label and annotation, and an owner reference (garbage-collected with it).

import type { V1ObjectMeta } from '@kubernetes/client-node';
import {
  ANNOTATION_ACTS_FOR,
  ANNOTATION_ADMISSION,
  ANNOTATION_RECONCILE,
  ANNOTATION_RECONCILE_REQUESTED_BY,
} from '../api/annotations.ts';
import {
  ANNOTATION_APPROVE,
  ANNOTATION_APPROVED_BY,
  ANNOTATION_CREATED_BY,
  type CronOperation,
  type WatchOperation,
} from '../api/index.ts';
import { actsForAnnotation } from '../identity/acts-for.ts';

/**
 * Template annotations that are never copied. Approval is given per Operation, by a user, and the webhook
 * records who gave it (and who created the Operation): a template carrying `approve: "true"` would approve
 * every Operation it creates in the operator's name, past policy.requiresApproval. A re-run request
 * (reconcile) is a user's too: on a created Operation its stamp would name the operator, which holds no
 * type verb, so the reconciler would refuse the Operation.
 */
export const NOT_COPIED_ANNOTATIONS: readonly string[] = [
  ANNOTATION_APPROVE,
  ANNOTATION_APPROVED_BY,
  ANNOTATION_CREATED_BY,
  ANNOTATION_ACTS_FOR,
  ANNOTATION_ADMISSION,
  ANNOTATION_RECONCILE,
  ANNOTATION_RECONCILE_REQUESTED_BY,
];

/**
 * metadata of an Operation `owner` creates: `name`, the template's labels plus `label`, the template's
 * annotations (less NOT_COPIED_ANNOTATIONS) plus `annotations` and acts-for, and a controller owner
 * reference.
 */
export function createdOperationMetadata(
  owner: CronOperation | WatchOperation,
  name: string,
  label: readonly [string, string],
  annotations: Readonly<Record<string, string>>,
): V1ObjectMeta {
  const tmpl = owner.spec.operationTemplate.metadata;
  const copied = Object.fromEntries(
    Object.entries(tmpl?.annotations ?? {}).filter(([k]) => !NOT_COPIED_ANNOTATIONS.includes(k)),
  );
  const ownerName = owner.metadata.name ?? '';
  return {
    name,
    ...(owner.metadata.namespace ? { namespace: owner.metadata.namespace } : {}),
    labels: { ...(tmpl?.labels ?? {}), [label[0]]: label[1] },
    // Whom it acts for: the scheduler's editor (and run-now requester), which the webhook checks.
    annotations: { ...copied, ...annotations, ...actsForAnnotation(owner, annotations) },
    // No blockOwnerDeletion: that would need update on the owner's finalizers subresource, and nothing
    // waits on it.
    ...(owner.metadata.uid
      ? {
          ownerReferences: [
            {
              apiVersion: owner.apiVersion,
              kind: owner.kind,
              name: ownerName,
              uid: owner.metadata.uid,
              controller: true,
            },
          ],
        }
      : {}),
  };
}
