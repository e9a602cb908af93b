// Admission of a snapshot restore drill (Verify, engine snapshot; ADR 0059). Pure.
//
// The drill copies a VolumeSnapshot into a claim its probe reads, with the operator's identity: without a
// check, anyone who may run a Verify on the instance would read snapshots through it that they may not
// read themselves. So the requester must be allowed to `get` the VolumeSnapshot parameters.snapshotName
// names, or, without a name (the newest snapshot Backup is chosen at run time), to `list` them — in the
// Operation's namespace, the only one a drill reads. The engine then refuses any snapshot no Backup of the
// instance made (snapshot-verify.ts).
import type { Template } from '../catalog/index.ts';
import type { AccessCheck } from './decision.ts';
import type { OperationSpecView } from './spec-view.ts';

/** A review the drill needs, at the field it is about (parameters-from.ts's SourceAccess). */
export interface DrillAccess {
  check: AccessCheck;
  field: string;
  why: string;
}

export function drillAccess(view: OperationSpecView, template: Template, base: string): DrillAccess[] {
  if (template.type !== 'Verify' || template.engine !== 'snapshot') return [];
  const name = view.parameters?.snapshotName;
  if (typeof name === 'string' && name !== '') {
    return [
      {
        check: { verb: 'get', resource: 'volumesnapshots', name },
        field: `${base}.parameters.snapshotName`,
        why: `a restore drill of VolumeSnapshot ${name}`,
      },
    ];
  }
  return [
    {
      check: { verb: 'list', resource: 'volumesnapshots' },
      field: `${base}.parameters`,
      why: 'a restore drill of the newest snapshot Backup (parameters.snapshotName unset)',
    },
  ];
}
