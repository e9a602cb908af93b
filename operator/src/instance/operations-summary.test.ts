import { describe, expect, it } from 'vitest';
import { anInstance, cronOp } from '../../../test/support/builders/schedule.ts';
import type { CronOperation, Operation, OperationPhase, OperationType } from '../api/index.ts';
import { nextScheduledRun, summarizeOperations } from './operations-summary.ts';

function op(
  name: string,
  type: OperationType,
  phase: OperationPhase | undefined,
  times: { created: string; started?: string; finished?: string; reason?: string; target?: string },
): Operation {
  return {
    apiVersion: 'ops.vworkspace.io/v1alpha1',
    kind: 'Operation',
    metadata: { name, namespace: 'team', creationTimestamp: times.created as unknown as Date },
    spec: { type, engine: 'velero', targetRef: { name: times.target ?? 'shop' } },
    ...(phase
      ? {
          status: {
            phase,
            ...(times.started ? { startedAt: times.started } : {}),
            ...(times.finished ? { finishedAt: times.finished } : {}),
            ...(times.reason
              ? {
                  conditions: [
                    {
                      type: 'Succeeded',
                      status: 'False' as const,
                      reason: times.reason,
                      message: '',
                      lastTransitionTime: times.created,
                    },
                  ],
                }
              : {}),
          },
        }
      : {}),
  };
}

describe('summarizeOperations', () => {
  const ops = [
    op('b1', 'Backup', 'Succeeded', { created: '2025-06-01T01:00:00Z', finished: '2025-06-01T01:05:00Z' }),
    op('b2', 'Backup', 'Failed', {
      created: '2025-06-02T01:00:00Z',
      finished: '2025-06-02T01:09:00Z',
      reason: 'VeleroBackupFailed',
    }),
    op('b3', 'Backup', 'Running', { created: '2025-06-03T01:00:00Z', started: '2025-06-03T01:00:05Z' }),
    op('b4', 'Backup', 'Blocked', { created: '2025-06-03T02:00:00Z' }),
    op('u1', 'Upgrade', undefined, { created: '2025-06-03T03:00:00Z' }),
    op('other', 'Restore', 'Succeeded', {
      created: '2025-06-01T00:00:00Z',
      finished: '2025-06-01T00:01:00Z',
      target: 'wiki',
    }),
  ];

  it('per type: the unfinished count, the oldest unfinished one and the last finished one', () => {
    expect(summarizeOperations('shop', ops)).toEqual([
      {
        type: 'Backup',
        active: 2,
        current: { name: 'b3', phase: 'Running', time: '2025-06-03T01:00:05Z' },
        last: { name: 'b2', phase: 'Failed', reason: 'VeleroBackupFailed', time: '2025-06-02T01:09:00Z' },
      },
      { type: 'Upgrade', active: 1, current: { name: 'u1', phase: 'Pending', time: '2025-06-03T03:00:00Z' } },
    ]);
    expect(summarizeOperations('nothing', ops)).toEqual([]);
  });

  it('keeps the last finished one after it is pruned, and never moves it back', () => {
    const before = summarizeOperations('shop', ops);
    const pruned = ops.filter((o) => o.metadata.name !== 'b2');
    expect(summarizeOperations('shop', pruned, before)[0]?.last?.name).toBe('b2');
    const gone = ops.filter((o) => o.spec.type !== 'Backup');
    expect(summarizeOperations('shop', gone, before)).toContainEqual({
      type: 'Backup',
      last: before[0]!.last,
    });
  });
});

describe('nextScheduledRun', () => {
  const withNext = (c: CronOperation, next: string, name: string): CronOperation => ({
    ...c,
    metadata: { ...c.metadata, name },
    status: { nextScheduleTime: next },
  });

  it('is the earliest planned run of the CronOperations that target the instance (fixed or fleet), not suspended', () => {
    const shop = anInstance('shop', { tier: 'prod' });
    const crons = [
      withNext(cronOp(), '2025-06-02T02:00:00Z', 'nightly'),
      withNext(
        cronOp({
          targetSelector: { matchLabels: { tier: 'prod' } },
          operationTemplate: { spec: { type: 'Upgrade', engine: 'helm' } },
        }),
        '2025-06-02T01:00:00Z',
        'fleet-upgrade',
      ),
      withNext(cronOp({ suspend: true }), '2025-06-01T00:00:00Z', 'suspended'),
      withNext(
        cronOp({ targetSelector: { matchLabels: { tier: 'dev' } } }),
        '2025-06-01T00:00:00Z',
        'dev-only',
      ),
    ];
    expect(nextScheduledRun(shop, crons)).toEqual({
      time: '2025-06-02T01:00:00Z',
      cronOperation: 'fleet-upgrade',
      type: 'Upgrade',
    });
    expect(nextScheduledRun(anInstance('wiki'), crons)).toBeUndefined();
  });
});
