// Each built-in template's outputSchema types what its engine's observe() really writes to status.outputs
// (spec.parametersFrom may only read declared outputs, so a key missing here could never be read).
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  aClaim,
  aHookJob,
  anInput,
  aReleaseHook,
  aSnapshotOf,
  aVeleroBackup,
  aWorkload,
  jobCondition,
  materialized,
  withStatus,
} from '../../../test/support/builders/engines.ts';
import { declaresOutput } from '../catalog/flow.ts';
import { validateWithSchema } from '../catalog/schema-validation.ts';
import { BUILTIN_TEMPLATES } from '../catalog/templates/index.ts';
import { ADAPTERS } from './index.ts';
import type { ChildManifest, EngineEnvironment, RestoreFacts } from './types.ts';

const PARAMETERS: Record<string, Record<string, unknown>> = {
  'velero-restore': { backupName: 'nightly-abcde' },
  'helm-upgrade': { version: '6.7.0' },
  'job-runcommand': { command: ['true'] },
  'velero-verify': { command: ['true'] },
  'snapshot-verify': { command: ['true'] },
  'workflow-runbook': { workflowTemplateRef: { name: 'db-maintenance' } },
  'volsync-backup': { repository: { data: 'restic-data', db: 'restic-db' } },
  'volsync-restore': { repository: { data: 'restic-data', db: 'restic-db' } },
  'volsync-verify': { repository: { data: 'restic-data', db: 'restic-db' }, command: ['true'] },
};

/** What a snapshot Restore starts from: the release's claim, its workload, a snapshot Backup of it. */
const BEFORE_RESTORE: RestoreFacts = {
  pvcs: [aClaim('data')],
  workloads: [aWorkload('StatefulSet', 'db', 1)],
  pods: [],
  snapshots: [aSnapshotOf('nightly-a', 'data')],
};
/** The cluster once an engine is done, where that shows outside its children (a Restore's claims). */
const AFTER: Record<string, Partial<EngineEnvironment>> = {
  'snapshot-restore': {
    restore: { ...BEFORE_RESTORE, pvcs: [aClaim('data', { uid: 'restored', fromSnapshot: 'nightly-a' })] },
  },
};

/** The status each engine's controller writes on success. */
function succeededStatus(c: ChildManifest): Record<string, unknown> {
  switch (c.kind) {
    case 'Backup':
    case 'Restore':
      return { phase: 'Completed' };
    case 'Job':
      return { conditions: [jobCondition('Complete')] };
    case 'Workflow':
      return { phase: 'Succeeded' };
    case 'VolumeSnapshot':
      return { readyToUse: true };
    case 'ConfigMap': // a snapshot Restore's plan: its progress shows on the claims (AFTER)
      return {};
    case 'PersistentVolumeClaim': // a snapshot or volsync Verify's restored copy
      return { phase: 'Bound' };
    case 'Namespace': // a Verify's scratch namespace
      return { phase: 'Active' };
    default:
      return { lastManualSync: (c.spec as { trigger: { manual: string } }).trigger.manual };
  }
}

/** A VolumeSnapshot as it is once the engine released it (snapshot.ts): no owner reference. */
function afterRelease(c: KubernetesObject): KubernetesObject {
  if (c.kind !== 'VolumeSnapshot') return c;
  const { ownerReferences: _gone, ...metadata } = c.metadata ?? {};
  return { ...c, metadata };
}

describe('built-in outputSchemas', () => {
  it.each(BUILTIN_TEMPLATES.map((t) => [t.name, t] as const))(
    '%s declares what its engine outputs',
    (_n, t) => {
      const input = anInput({
        type: t.type,
        engine: t.engine,
        parameters: PARAMETERS[t.name] ?? {},
        env: {
          pvcs: ['data', 'db'],
          veleroBackup: aVeleroBackup('nightly-abcde'),
          helmImage:
            'quay.io/vworkspace/helm@sha256:0000000000000000000000000000000000000000000000000000000000000000',
          restore: BEFORE_RESTORE,
          // A volsync Verify's Backup and the claims its copies are sized by.
          volsyncBackups: [
            {
              operation: 'restic-nightly',
              completedAt: '2026-11-28T10:00:00Z',
              repository: { data: 'restic-data', db: 'restic-db' },
            },
          ],
          releaseClaims: [aClaim('data'), aClaim('db')],
          // Two hook Jobs: the sequence's outputs (jobName and jobNames).
          releaseHooks: {
            revision: 1,
            hooks: [aReleaseHook(aHookJob('prepare'), { weight: -1 }), aReleaseHook(aHookJob('migrate'))],
          },
        },
      });
      const adapter = ADAPTERS[t.engine];
      const children: KubernetesObject[] = materialized(adapter.materialize(input)).map((c) =>
        afterRelease(withStatus(c, succeededStatus(c))),
      );
      const obs = adapter.observe(children, { ...input, env: { ...input.env, ...AFTER[t.name] } });
      expect(obs.phase).toBe('Succeeded');
      const outputs = obs.outputs ?? {};
      expect(Object.keys(outputs).length).toBeGreaterThan(0);
      expect(t.outputSchema).toBeDefined();
      for (const key of Object.keys(outputs)) expect([key, declaresOutput(t, key)]).toEqual([key, true]);
      const r = validateWithSchema(t.outputSchema!, outputs, 'status.outputs');
      expect(r.ok ? [] : r.errors).toEqual([]);
    },
  );
});
