// Which CronOperation or WatchOperation an Operation belongs to: its controller ownerReference, which
// only the operator writes (the webhook refuses it from anyone else, admission/scheduled.ts), never the
// ops.vworkspace.io/cron-operation or watch-operation label, which anyone who may edit the Operation sets.
// What a scheduler counts (concurrency, status.active), prunes and adopts goes by the reference's uid.

import type { V1OwnerReference } from '@kubernetes/client-node';
import { OPS_GROUP } from './constants.ts';
import type { Operation } from './operation.ts';

/** The kinds that create Operations on a schedule or a trigger. */
export type SchedulerKind = 'CronOperation' | 'WatchOperation';

/** The controller ownerReference of `op` when it names a scheduler of `kind`. */
export function schedulerOwner(
  op: Pick<Operation, 'metadata'>,
  kind: SchedulerKind,
): V1OwnerReference | undefined {
  const ref = op.metadata.ownerReferences?.find((r) => r.controller === true);
  return ref?.kind === kind && ref.apiVersion.startsWith(`${OPS_GROUP}/`) ? ref : undefined;
}

/** True when `op`'s controller is the scheduler of `kind` with `uid` (this very object, not a namesake). */
export function isControlledBy(
  op: Pick<Operation, 'metadata'>,
  kind: SchedulerKind,
  uid: string | undefined,
): boolean {
  return uid !== undefined && uid !== '' && schedulerOwner(op, kind)?.uid === uid;
}
