import { describe, expect, it } from 'vitest';
import {
  anInput,
  aVeleroBackup,
  builtinTemplate,
  materialized,
  withStatus,
} from '../../../test/support/builders/engines.ts';
import {
  LABEL_INSTANCE,
  LABEL_OPERATION,
  LABEL_OPERATION_NAMESPACE,
  LABEL_OPERATION_UID,
  LABEL_RELEASE,
} from '../api/annotations.ts';
import type { EffectiveTemplate } from '../catalog/template.ts';
import type { EngineEnvironment } from './types.ts';
import { QUIESCE_COMMAND, QUIESCE_POD_LABEL, UNQUIESCE_COMMAND, veleroAdapter } from './velero.ts';

const backupInput = (parameters: Record<string, unknown> = {}, annotations: Record<string, string> = {}) =>
  anInput({
    name: 'pre-upgrade',
    namespace: 'team-a',
    type: 'Backup',
    engine: 'velero',
    parameters,
    instance: { annotations },
  });
const restoreInput = (
  parameters: Record<string, unknown> = { backupName: 'pre-upgrade-abc' },
  o: { backup?: EngineEnvironment['veleroBackup'] | null; template?: EffectiveTemplate } = {},
) =>
  anInput({
    name: 'roll-back',
    namespace: 'team-a',
    type: 'Restore',
    engine: 'velero',
    parameters,
    ...(o.template ? { template: o.template } : {}),
    env: o.backup === null ? {} : { veleroBackup: o.backup ?? aVeleroBackup(String(parameters.backupName)) },
  });

/** A platform admin's restore template that offers (and, with `allow`, grants) cluster-scoped objects. */
function clusterRestoreTemplate(allow: boolean): EffectiveTemplate {
  const t = builtinTemplate('Restore', 'velero');
  const schema = structuredClone(t.inputSchema) as { properties: Record<string, unknown> };
  schema.properties.includeClusterResources = { type: 'boolean' };
  return {
    ...t,
    name: 'admin-restore',
    inputSchema: schema,
    ...(allow ? { allowClusterResources: true } : {}),
    source: 'test',
  };
}

function backupWith(status: Record<string, unknown>) {
  const [child] = materialized(veleroAdapter.materialize(backupInput()));
  if (!child) throw new Error('no child');
  return withStatus(child, status);
}

describe('velero materialize', () => {
  it('backs up only the Operation namespace and what brings the instance back, in the Velero namespace, labelled not owned', () => {
    const [b] = materialized(
      veleroAdapter.materialize(backupInput({ storageLocation: 'primary', snapshotVolumes: false })),
    );
    expect(b).toMatchObject({
      apiVersion: 'velero.io/v1',
      kind: 'Backup',
      metadata: {
        namespace: 'velero',
        labels: {
          [LABEL_OPERATION]: 'pre-upgrade',
          [LABEL_OPERATION_NAMESPACE]: 'team-a',
          [LABEL_OPERATION_UID]: '0a1b2c3d-0000-4000-8000-000000000001',
          [LABEL_INSTANCE]: 'nextcloud',
          [LABEL_RELEASE]: 'nextcloud-team-a',
        },
      },
      spec: {
        includedNamespaces: ['team-a'],
        // The release's objects, Helm's release record, the ApplicationInstance (any one matches).
        orLabelSelectors: [
          { matchLabels: { 'app.kubernetes.io/instance': 'nextcloud-team-a' } },
          { matchLabels: { owner: 'helm', name: 'nextcloud-team-a' } },
          { matchLabels: { [LABEL_RELEASE]: 'nextcloud-team-a' } },
        ],
        excludedResources: [
          'operations.ops.vworkspace.io',
          'cronoperations.ops.vworkspace.io',
          'watchoperations.ops.vworkspace.io',
        ],
        storageLocation: 'primary',
        ttl: '720h',
        snapshotVolumes: false,
      },
    });
    expect(b?.metadata.name).toMatch(/^pre-upgrade-[a-z2-7]{8}$/);
    expect(b?.metadata).not.toHaveProperty('ownerReferences');
    // Velero refuses a Backup with both a labelSelector and orLabelSelectors.
    expect(b?.spec).not.toHaveProperty('labelSelector');
    expect(b?.spec).not.toHaveProperty('hooks');
    expect(b?.spec).not.toHaveProperty('defaultVolumesToFsBackup');
  });

  it("labels a CronOperation's Backup with the CronOperation that owns its Operation, not with a label", () => {
    const scheduled = backupInput();
    scheduled.op.metadata.ownerReferences = [
      {
        apiVersion: 'ops.vworkspace.io/v1alpha1',
        kind: 'CronOperation',
        name: 'nightly',
        uid: 'c1',
        controller: true,
      },
    ];
    const [b] = materialized(veleroAdapter.materialize(scheduled));
    expect(b?.metadata.labels?.['ops.vworkspace.io/cron-operation']).toBe('nightly');
    const labelled = backupInput();
    labelled.op.metadata.labels = { 'ops.vworkspace.io/cron-operation': 'nightly' };
    const [plain] = materialized(veleroAdapter.materialize(labelled));
    expect(plain?.metadata.labels).not.toHaveProperty(['ops.vworkspace.io/cron-operation']);
  });

  it('labels the instance first, so the Backup selects it; not again once it carries the label', () => {
    const r = veleroAdapter.materialize(backupInput());
    expect(r).toMatchObject({
      ok: true,
      prepare: [
        {
          kind: 'patch',
          child: {
            apiVersion: 'apps.vworkspace.io/v1alpha1',
            kind: 'ApplicationInstance',
            metadata: { name: 'nextcloud', namespace: 'team-a' },
          },
          patch: { metadata: { labels: { [LABEL_RELEASE]: 'nextcloud-team-a' } } },
        },
      ],
    });
    const input = backupInput();
    input.target.metadata.labels = { [LABEL_RELEASE]: 'nextcloud-team-a' };
    expect(veleroAdapter.materialize(input)).not.toHaveProperty('prepare');
  });

  it('is deterministic', () => {
    expect(veleroAdapter.materialize(backupInput())).toEqual(veleroAdapter.materialize(backupInput()));
  });

  it('quiesces with a Velero pre-hook (and un-quiesces after) when quiesce is exec', () => {
    const [b] = materialized(
      veleroAdapter.materialize(backupInput({ quiesce: 'exec' }, { 'ops.vworkspace.io/quiesce': 'exec' })),
    );
    const hook = (b?.spec as { hooks: { resources: Record<string, unknown>[] } }).hooks.resources[0];
    expect(hook).toMatchObject({
      includedNamespaces: ['team-a'],
      labelSelector: {
        matchLabels: { 'app.kubernetes.io/instance': 'nextcloud-team-a', [QUIESCE_POD_LABEL]: 'exec' },
      },
      pre: [{ exec: { command: QUIESCE_COMMAND, onError: 'Fail' } }],
      post: [{ exec: { command: UNQUIESCE_COMMAND, onError: 'Continue' } }],
    });
  });

  it('refuses quiesce exec on an instance without the quiesce capability', () => {
    const r = veleroAdapter.materialize(backupInput({ quiesce: 'exec' }));
    expect(r).toMatchObject({ ok: false, reason: 'CapabilityMissing' });
  });

  it('restores the named backup into the Operation namespace only', () => {
    const [r] = materialized(
      veleroAdapter.materialize(restoreInput({ backupName: 'b1', existingResourcePolicy: 'update' })),
    );
    expect(r).toMatchObject({
      kind: 'Restore',
      metadata: { namespace: 'velero' },
      spec: {
        backupName: 'b1',
        includedNamespaces: ['team-a'],
        orLabelSelectors: [
          { matchLabels: { 'app.kubernetes.io/instance': 'nextcloud-team-a' } },
          { matchLabels: { owner: 'helm', name: 'nextcloud-team-a' } },
          { matchLabels: { [LABEL_RELEASE]: 'nextcloud-team-a' } },
        ],
        existingResourcePolicy: 'update',
        restorePVs: true,
      },
    });
    expect(veleroAdapter.materialize(restoreInput({ backupName: 'b1' }))).not.toHaveProperty('prepare');
    expect(r?.spec).not.toHaveProperty('namespaceMapping');
    expect(r?.spec).not.toHaveProperty('includeClusterResources');
  });

  it.each([
    ['does not exist', null],
    ['was made for another namespace', aVeleroBackup('b1', 'team-b')],
    ['carries no namespace label (an admin backup)', { name: 'b1', labels: {} }],
  ])('refuses a Backup that %s, with one message that does not tell which', (_why, backup) => {
    const r = veleroAdapter.materialize(restoreInput({ backupName: 'b1' }, { backup }));
    expect(r).toMatchObject({ ok: false, reason: 'BackupNotAllowed' });
    if (!r.ok) {
      expect(r.message).toContain('parameters.backupName');
      expect(r.message).toContain(`${LABEL_OPERATION_NAMESPACE}=team-a`);
      expect(r.message).not.toContain('team-b');
    }
  });

  it('restores cluster-scoped objects only through a template that allows them', () => {
    const ask = { backupName: 'b1', includeClusterResources: true };
    const refused = veleroAdapter.materialize(restoreInput(ask, { template: clusterRestoreTemplate(false) }));
    expect(refused).toMatchObject({ ok: false, reason: 'NotAllowedByTemplate' });
    if (!refused.ok) expect(refused.message).toMatch(/^spec\.parameters\.includeClusterResources: /);
    const [r] = materialized(
      veleroAdapter.materialize(restoreInput(ask, { template: clusterRestoreTemplate(true) })),
    );
    expect(r?.spec).toMatchObject({ includeClusterResources: true, includedNamespaces: ['team-a'] });
  });
});

describe('velero observe', () => {
  it.each([
    ['', 'Running', 'VeleroBackupInProgress'],
    ['New', 'Running', 'VeleroBackupInProgress'],
    ['InProgress', 'Running', 'VeleroBackupInProgress'],
    ['WaitingForPluginOperations', 'Running', 'VeleroBackupInProgress'],
    ['WaitingForPluginOperationsPartiallyFailed', 'Running', 'VeleroBackupInProgress'],
    ['Finalizing', 'Running', 'VeleroBackupInProgress'],
    ['Queued', 'Running', 'VeleroBackupInProgress'],
    ['ReadyToStart', 'Running', 'VeleroBackupInProgress'],
    ['FinalizingPartiallyFailed', 'Running', 'VeleroBackupInProgress'],
    ['Completed', 'Succeeded', 'VeleroBackupCompleted'],
    ['PartiallyFailed', 'Failed', 'VeleroBackupPartiallyFailed'],
    ['Failed', 'Failed', 'VeleroBackupFailed'],
    ['FailedValidation', 'Failed', 'VeleroBackupFailed'],
    ['Deleting', 'Failed', 'VeleroBackupFailed'],
  ])('Backup phase %j ⇒ %s/%s', (phase, expected, reason) => {
    const o = veleroAdapter.observe([backupWith(phase ? { phase } : {})], backupInput());
    expect(o.phase).toBe(expected);
    expect(o.reason).toBe(reason);
    expect(o.outputs?.backupName).toMatch(/^pre-upgrade-/);
  });

  it('reports error and warning counts, the failure reason and validation errors', () => {
    const partial = veleroAdapter.observe(
      [backupWith({ phase: 'PartiallyFailed', errors: 2, warnings: 3 })],
      backupInput(),
    );
    expect(partial.message).toContain('2 error(s) and 3 warning(s)');
    expect(partial.retryable).toBe(true);
    const failedRun = veleroAdapter.observe(
      [backupWith({ phase: 'Failed', failureReason: 'BSL unavailable' })],
      backupInput(),
    );
    expect(failedRun.message).toContain('BSL unavailable');
    const invalid = veleroAdapter.observe(
      [backupWith({ phase: 'FailedValidation', validationErrors: ['storage location "x" not found'] })],
      backupInput(),
    );
    expect(invalid.message).toContain('storage location "x" not found');
    expect(invalid.retryable).toBe(false);
  });

  it('maps Restore phases onto the VeleroRestore reasons with both names as outputs', () => {
    const [child] = materialized(veleroAdapter.materialize(restoreInput()));
    if (!child) throw new Error('no child');
    const done = veleroAdapter.observe([withStatus(child, { phase: 'Completed' })], restoreInput());
    expect(done).toMatchObject({
      phase: 'Succeeded',
      reason: 'VeleroRestoreCompleted',
      outputs: { backupName: 'pre-upgrade-abc' },
    });
    expect(done.outputs?.restoreName).toBe(child.metadata.name);
    expect(veleroAdapter.observe([withStatus(child, { phase: 'InProgress' })], restoreInput()).reason).toBe(
      'VeleroRestoreInProgress',
    );
    expect(
      veleroAdapter.observe([withStatus(child, { phase: 'PartiallyFailed' })], restoreInput()).reason,
    ).toBe('VeleroRestorePartiallyFailed');
    expect(veleroAdapter.observe([withStatus(child, { phase: 'Failed' })], restoreInput()).reason).toBe(
      'VeleroRestoreFailed',
    );
  });

  it("says a queued Backup's place in Velero's queue", () => {
    const o = veleroAdapter.observe([backupWith({ phase: 'Queued', queuePosition: 2 })], backupInput());
    expect(o.message).toMatch(/is Queued \(position 2 in Velero's backup queue\)$/);
  });

  it('is Running while the child is not visible yet', () => {
    expect(veleroAdapter.observe([], backupInput()).reason).toBe('VeleroBackupInProgress');
    expect(veleroAdapter.observe([], restoreInput()).reason).toBe('VeleroRestoreInProgress');
  });
});

describe('velero cancel', () => {
  const cancelling = () => {
    const input = backupInput();
    return { ...input, op: { ...input.op, spec: { ...input.op.spec, cancel: true } } };
  };

  it.each([
    'ReadyToStart',
    'InProgress',
    'WaitingForPluginOperations',
    'Finalizing',
    'FinalizingPartiallyFailed',
  ])('waits while the Backup is %s: Velero can neither stop nor delete it then', (phase) => {
    const b = backupWith({ phase, progress: { itemsBackedUp: 3, totalItems: 7 } });
    const actions = veleroAdapter.cancel([b]);
    expect(actions).toEqual([{ kind: 'wait', message: expect.stringContaining(`is ${phase} (3/7 items)`) }]);
    expect(actions[0]).toMatchObject({
      message: expect.stringMatching(/^Velero cannot stop a Backup in flight/),
    });
  });

  it.each([
    ['Completed', 'Completed before it could be stopped'],
    ['PartiallyFailed', 'PartiallyFailed before it could be stopped'],
    ['Failed', 'Failed before it could be stopped'],
    ['', 'had not started (New)'],
    ['New', 'had not started (New)'],
    ['Queued', 'had not started (Queued)'],
  ])(
    'files a DeleteBackupRequest for a Backup that is %j (Velero deletes it with its files)',
    (phase, says) => {
      const b = backupWith(phase ? { phase } : {});
      const [create, wait] = veleroAdapter.cancel([b]);
      expect(create).toMatchObject({
        kind: 'create',
        object: {
          apiVersion: 'velero.io/v1',
          kind: 'DeleteBackupRequest',
          metadata: {
            name: `${b.metadata?.name}-cancel`,
            namespace: 'velero',
            labels: { 'velero.io/backup-name': b.metadata?.name, 'velero.io/backup-uid': 'child-uid' },
          },
          spec: { backupName: b.metadata?.name },
        },
      });
      expect(wait).toEqual({ kind: 'wait', message: expect.stringContaining(says) });
    },
  );

  it('waits while Velero deletes the Backup', () => {
    expect(veleroAdapter.cancel([backupWith({ phase: 'Deleting' })])).toEqual([
      {
        kind: 'wait',
        message: expect.stringMatching(
          /^Velero is deleting velero\.io Backup velero\/pre-upgrade-\S+ and its files$/,
        ),
      },
    ]);
  });

  it('while cancelling, a finished or deleting Backup is not the end: Running until it is gone', () => {
    for (const phase of ['Completed', 'PartiallyFailed', 'Failed', 'FailedValidation', 'Deleting']) {
      const o = veleroAdapter.observe([backupWith({ phase })], cancelling());
      expect(o).toMatchObject({ phase: 'Running', reason: 'VeleroBackupInProgress' });
      expect(o.message).toMatch(/after spec\.cancel$/);
    }
    // Without a cancel the same phases finish the Operation.
    expect(veleroAdapter.observe([backupWith({ phase: 'Completed' })], backupInput()).phase).toBe(
      'Succeeded',
    );
  });

  it('deletes a Restore', () => {
    const [child] = materialized(veleroAdapter.materialize(restoreInput()));
    if (!child) throw new Error('no child');
    expect(veleroAdapter.cancel([withStatus(child, { phase: 'InProgress' })])).toMatchObject([
      { kind: 'delete' },
    ]);
  });
});
