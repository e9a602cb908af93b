import { describe, expect, it } from 'vitest';
import { cronOp } from '../../../test/support/builders/schedule.ts';
import { APPLICATION_INSTANCE, type Operation } from '../api/index.ts';
import { BUILTIN_TEMPLATES } from '../catalog/index.ts';
import { parseArgs } from './args.ts';
import { historyTable, instanceStatus, progressLine, triggerOf } from './format.ts';
import { historyQuery, manualRunPrefix, operationFromTemplate, restoreOperation } from './requests.ts';

function op(
  name: string,
  extra: Partial<Operation['metadata']> = {},
  status: Operation['status'] = {},
): Operation {
  return {
    apiVersion: 'ops.vworkspace.io/v1alpha1',
    kind: 'Operation',
    metadata: {
      name,
      namespace: 'team',
      creationTimestamp: '2025-06-01T00:00:00Z' as unknown as Date,
      ...extra,
    },
    spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'shop' } },
    status,
  };
}

describe('kubectl vws output', () => {
  it('names how each Operation came to be', () => {
    const labels = { 'ops.vworkspace.io/cron-operation': 'nightly' };
    expect(
      triggerOf(
        op('a', { labels, annotations: { 'ops.vworkspace.io/scheduled-time': '2025-06-01T01:00:00Z' } }),
      ),
    ).toBe('schedule 2025-06-01T01:00:00Z (nightly)');
    expect(triggerOf(op('b', { labels, annotations: { 'ops.vworkspace.io/trigger': 'manual' } }))).toBe(
      'manual (nightly)',
    );
    expect(triggerOf(op('c', { annotations: { 'ops.vworkspace.io/created-by': 'alice' } }))).toBe('by alice');
  });

  it('prints progress lines and a history table newest first, with durations', () => {
    const failed = op(
      'b2',
      { creationTimestamp: '2025-06-02T00:00:00Z' as unknown as Date },
      {
        phase: 'Failed',
        startedAt: '2025-06-02T00:00:00Z',
        finishedAt: '2025-06-02T00:03:00Z',
        conditions: [
          {
            type: 'Succeeded',
            status: 'False',
            reason: 'VeleroBackupFailed',
            message: 'see the Backup',
            lastTransitionTime: '2025-06-02T00:03:00Z',
          },
        ],
      },
    );
    expect(progressLine(failed, new Date('2025-06-02T00:03:01Z'))).toBe(
      '00:03:01 b2 Failed VeleroBackupFailed: see the Backup',
    );
    expect(historyTable([op('b1'), failed]).split('\n')).toEqual([
      'NAME  TYPE    TARGET  TRIGGER  PHASE    REASON              STARTED               DURATION',
      'b2    Backup  shop    -        Failed   VeleroBackupFailed  2025-06-02T00:00:00Z  3m',
      'b1    Backup  shop    -        Pending  -                   -                     -',
    ]);
    expect(historyTable([])).toBe('No Operations found.');
  });
});

describe('kubectl vws requests', () => {
  it('builds an Operation from a built-in template, or needs --type and --engine', () => {
    const r = operationFromTemplate(
      { template: 'helm-upgrade', target: 'shop', parameters: { version: '2.0.0' } },
      'team',
      BUILTIN_TEMPLATES,
    );
    expect(r).toEqual({
      ok: true,
      op: {
        apiVersion: 'ops.vworkspace.io/v1alpha1',
        kind: 'Operation',
        metadata: { namespace: 'team', generateName: 'helm-upgrade-' },
        spec: {
          type: 'Upgrade',
          engine: 'helm',
          template: 'helm-upgrade',
          targetRef: { name: 'shop' },
          parameters: { version: '2.0.0' },
        },
      },
    });
    expect(
      operationFromTemplate({ template: 'mine', target: 'shop', parameters: {} }, 'team', BUILTIN_TEMPLATES),
    ).toMatchObject({ ok: false });
    expect(
      operationFromTemplate(
        { template: 'mine', target: 'shop', type: 'Backup', engine: 'tar', parameters: {} },
        'team',
        BUILTIN_TEMPLATES,
      ),
    ).toEqual({ ok: false, message: expect.stringContaining('--engine tar: use one of velero') });
  });

  it('builds a restore drill from `run template/velero-verify` with the probe as a JSON -p value', () => {
    const parsed = parseArgs([
      'run',
      'template/velero-verify',
      '--target',
      'shop',
      '-p',
      'command=["sh","-c","pg_isready -h db.$VWS_SCRATCH_NAMESPACE.svc"]',
      '-n',
      'shop',
    ]);
    if (!parsed.ok || parsed.command.cmd !== 'run-template') throw new Error(JSON.stringify(parsed));
    const { cmd: _c, follow: _f, ...run } = parsed.command;
    expect(operationFromTemplate(run, 'shop', BUILTIN_TEMPLATES)).toMatchObject({
      ok: true,
      op: {
        spec: {
          type: 'Verify',
          engine: 'velero',
          template: 'velero-verify',
          targetRef: { name: 'shop' },
          parameters: { command: ['sh', '-c', 'pg_isready -h db.$VWS_SCRATCH_NAMESPACE.svc'] },
        },
      },
    });
  });

  it("builds a Restore from a namespace's backups: the instance may be gone; another namespace is a clone", () => {
    expect(restoreOperation({ instance: 'shop' }, 'shop')).toEqual({
      apiVersion: 'ops.vworkspace.io/v1alpha1',
      kind: 'Operation',
      metadata: { namespace: 'shop', generateName: 'restore-shop-' },
      spec: { type: 'Restore', engine: 'velero', targetRef: { name: 'shop' }, source: { namespace: 'shop' } },
    });
    const clone = restoreOperation({ instance: 'shop', from: 'prod', backup: 'b1', name: 'r' }, 'staging');
    expect(clone).toMatchObject({
      metadata: { name: 'r' },
      spec: { source: { namespace: 'prod' }, parameters: { backupName: 'b1' } },
    });
  });

  it('finds the run-now Operations and the history of an object', () => {
    expect(manualRunPrefix(cronOp(), 'r1')).toMatch(/^nightly-m[0-9a-f]{7}$/);
    const cron = historyQuery({ kind: 'cronoperation', name: 'nightly' }, undefined);
    expect(cron.labelSelector).toBe('ops.vworkspace.io/cron-operation=nightly');
    // The label narrows the list; only the Operations the CronOperation controls are its history.
    const ref = {
      apiVersion: 'ops.vworkspace.io/v1alpha1',
      kind: 'CronOperation',
      name: 'nightly',
      uid: 'u',
    };
    const owned = {
      ...op('x'),
      metadata: { ...op('x').metadata, ownerReferences: [{ ...ref, controller: true }] },
    };
    expect(cron.keep(owned)).toBe(true);
    expect(cron.keep(op('labelled-by-hand'))).toBe(false);
    const q = historyQuery({ kind: 'applicationinstance', name: 'shop' }, 'backup');
    expect(q.labelSelector).toBeUndefined();
    expect(q.keep(op('x'))).toBe(true);
    expect(q.keep({ ...op('y'), spec: { ...op('y').spec, targetRef: { name: 'wiki' } } })).toBe(false);
  });

  it('shows what an instance has proved about its backups, and nothing it has not', () => {
    const base = {
      apiVersion: APPLICATION_INSTANCE.apiVersion,
      kind: APPLICATION_INSTANCE.kind,
      metadata: { name: 'shop', namespace: 'team' },
      spec: { appRef: { catalogId: 'tiny' }, release: { name: 'shop' } },
    };
    const proven = instanceStatus({
      ...base,
      status: {
        lastSuccessfulBackup: { time: '2026-11-27T02:00:41Z', operation: 'nightly-1' },
        lastVerifiedBackup: { time: '2026-11-27T04:03:12Z', operation: 'drill-1', rtoSeconds: 93.5 },
        lastDrill: {
          time: '2026-11-28T04:03:12Z',
          operation: 'drill-2',
          result: 'Failed',
          reason: 'ProbeFailed',
        },
      },
    }).split('\n');
    expect(proven).toContainEqual(
      expect.stringMatching(/^Last backup: +2026-11-27T02:00:41Z \(nightly-1\)$/),
    );
    expect(proven).toContainEqual(
      expect.stringMatching(/^Last verified: +2026-11-27T04:03:12Z \(drill-1\), RTO 93.5s$/),
    );
    expect(proven).toContainEqual(
      expect.stringMatching(/^Last drill: +Failed ProbeFailed at 2026-11-28T04:03:12Z \(drill-2\)$/),
    );
    expect(instanceStatus(base)).not.toMatch(/Last (backup|verified|drill)/);
  });
});
