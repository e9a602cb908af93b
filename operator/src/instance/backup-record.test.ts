import { describe, expect, it } from 'vitest';
import { OPERATION, type Operation, type OperationPhase, type OperationType } from '../api/index.ts';
import { backupRecord, lastDrill, lastSuccessfulBackup, lastVerifiedBackup } from './backup-record.ts';

function op(
  name: string,
  opts: { type?: OperationType; target?: string; phase?: OperationPhase; finishedAt?: string } = {},
): Operation {
  return {
    apiVersion: OPERATION.apiVersion,
    kind: OPERATION.kind,
    metadata: { name, namespace: 'apps', creationTimestamp: '2026-01-01T00:00:00Z' as unknown as Date },
    spec: { type: opts.type ?? 'Backup', engine: 'velero', targetRef: { name: opts.target ?? 'shop' } },
    status: {
      phase: opts.phase ?? 'Succeeded',
      ...(opts.finishedAt ? { finishedAt: opts.finishedAt } : {}),
    },
  } as Operation;
}

describe('lastSuccessfulBackup', () => {
  it('is the newest Succeeded Backup of the instance, by finishedAt', () => {
    const ops = [
      op('b1', { finishedAt: '2026-01-01T01:00:00Z' }),
      op('b3', { finishedAt: '2026-01-01T03:00:00.250Z' }),
      op('b2', { finishedAt: '2026-01-01T02:00:00Z' }),
    ];
    expect(lastSuccessfulBackup('shop', ops, undefined)).toEqual({
      time: '2026-01-01T03:00:00Z',
      operation: 'b3',
    });
  });

  it('ignores failed and cancelled Backups, other types and other instances', () => {
    const ops = [
      op('ok', { finishedAt: '2026-01-01T01:00:00Z' }),
      op('failed', { phase: 'Failed', finishedAt: '2026-01-01T05:00:00Z' }),
      op('cancelled', { phase: 'Cancelled', finishedAt: '2026-01-01T05:00:00Z' }),
      op('running', { phase: 'Running' }),
      op('restore', { type: 'Restore', finishedAt: '2026-01-01T05:00:00Z' }),
      op('other', { target: 'blog', finishedAt: '2026-01-01T05:00:00Z' }),
    ];
    expect(lastSuccessfulBackup('shop', ops, undefined)?.operation).toBe('ok');
    expect(lastSuccessfulBackup('nobody', ops, undefined)).toBeUndefined();
  });

  it('keeps what the status recorded when the Operation is pruned, and a later failure does not move it', () => {
    const previous = { time: '2026-01-02T00:00:00Z', operation: 'pruned' };
    const ops = [
      op('older', { finishedAt: '2026-01-01T00:00:00Z' }),
      op('failed', { phase: 'Failed', finishedAt: '2026-01-03T00:00:00Z' }),
    ];
    expect(lastSuccessfulBackup('shop', ops, previous)).toEqual(previous);
    expect(lastSuccessfulBackup('shop', [], previous)).toEqual(previous);
  });

  it('moves forward when a newer Backup succeeds', () => {
    const previous = { time: '2026-01-02T00:00:00Z', operation: 'old' };
    expect(
      lastSuccessfulBackup('shop', [op('new', { finishedAt: '2026-01-02T00:00:01Z' })], previous),
    ).toEqual({ time: '2026-01-02T00:00:01Z', operation: 'new' });
  });

  it('does not depend on the order of the cache when two finish at the same second', () => {
    const a = op('slot-a', { finishedAt: '2026-01-01T01:00:00Z' });
    const b = op('slot-b', { finishedAt: '2026-01-01T01:00:00Z' });
    expect(lastSuccessfulBackup('shop', [a, b], undefined)).toEqual(
      lastSuccessfulBackup('shop', [b, a], undefined),
    );
  });

  it('replaces an unreadable recorded time', () => {
    expect(
      lastSuccessfulBackup('shop', [op('b', { finishedAt: '2026-01-01T01:00:00Z' })], {
        time: 'garbage',
        operation: 'x',
      }),
    ).toEqual({ time: '2026-01-01T01:00:00Z', operation: 'b' });
  });
});

/** A finished Verify drill with the outputs the velero adapter writes. */
function drill(
  name: string,
  phase: OperationPhase,
  finishedAt: string,
  outputs: Record<string, string> = {},
  reason = phase === 'Succeeded' ? 'VerifyPassed' : 'VerifyProbeFailed',
): Operation {
  const o = op(name, { type: 'Verify', phase, finishedAt });
  o.status = {
    ...o.status,
    outputs,
    conditions: [
      {
        type: 'Succeeded',
        status: phase === 'Succeeded' ? 'True' : 'False',
        reason,
        message: 'm',
        lastTransitionTime: finishedAt,
      },
    ],
  } as Operation['status'];
  return o;
}

const PASSED = {
  verifiedBackup: 'nightly-7',
  rtoSeconds: '125',
  rpoSeconds: '7325',
  verifiedAt: '2026-01-02T00:00:00Z',
};

describe('the drill fields from Verify Operations', () => {
  it('lastVerifiedBackup: the newest passed drill, with the backup, RTO and RPO it measured', () => {
    const ops = [
      drill('v1', 'Succeeded', '2026-01-01T00:00:00Z', {
        ...PASSED,
        verifiedAt: '2026-01-01T00:00:00Z',
        verifiedBackup: 'old',
      }),
      drill('v2', 'Succeeded', '2026-01-02T00:00:03Z', PASSED),
      drill('v3', 'Failed', '2026-01-03T00:00:00Z'),
      op('b', { finishedAt: '2026-01-04T00:00:00Z' }),
    ];
    expect(lastVerifiedBackup('shop', ops, undefined)).toEqual({
      time: '2026-01-02T00:00:00Z',
      operation: 'v2',
      backup: 'nightly-7',
      rtoSeconds: 125,
      rpoSeconds: 7325,
    });
  });

  it('lastDrill: the newest drill that passed or failed, with its reason; a cancelled one is no result', () => {
    const ops = [
      drill('v1', 'Succeeded', '2026-01-01T00:00:00Z', PASSED),
      drill('v2', 'Failed', '2026-01-02T00:00:00Z', {}, 'VerifyRestoreFailed'),
      drill('v3', 'Cancelled', '2026-01-03T00:00:00Z'),
    ];
    expect(lastDrill('shop', ops, undefined)).toEqual({
      time: '2026-01-02T00:00:00Z',
      operation: 'v2',
      result: 'Failed',
      reason: 'VerifyRestoreFailed',
    });
    expect(lastDrill('blog', ops, undefined)).toBeUndefined();
  });

  it('a passed drill without a measured RTO verifies nothing', () => {
    expect(
      lastVerifiedBackup('shop', [drill('v', 'Succeeded', '2026-01-01T00:00:00Z', {})], undefined),
    ).toBeUndefined();
  });

  it('both only move forward: a pruned drill takes nothing away', () => {
    const record = backupRecord(
      'shop',
      [drill('v2', 'Succeeded', '2026-01-02T00:00:03Z', PASSED)],
      undefined,
    );
    const later = backupRecord('shop', [], record);
    expect(later).toEqual(record);
    expect(later.lastDrill).toMatchObject({ operation: 'v2', result: 'Succeeded' });
  });
});

describe('backupRecord', () => {
  it('carries the drill fields over when no drill is newer, and leaves out what is unknown', () => {
    const lastVerifiedBackup = {
      time: '2026-01-02T00:00:00Z',
      operation: 'verify-1',
      backup: 'b1',
      rtoSeconds: 42,
    };
    const lastDrill = { time: '2026-01-03T00:00:00Z', operation: 'verify-2', result: 'Failed' as const };
    expect(backupRecord('shop', [], { lastVerifiedBackup, lastDrill })).toEqual({
      lastVerifiedBackup,
      lastDrill,
    });
    expect(backupRecord('shop', [], undefined)).toEqual({});
  });
});
