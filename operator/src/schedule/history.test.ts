import { describe, expect, it } from 'vitest';
import type { Operation, OperationPhase } from '../api/index.ts';
import { activeRefs, lastSuccessfulTime, operationsToPrune } from './history.ts';

function op(name: string, phase?: OperationPhase, finishedAt?: string): Operation {
  return {
    apiVersion: 'ops.vworkspace.io/v1alpha1',
    kind: 'Operation',
    metadata: { name, creationTimestamp: '2025-01-01T00:00:00Z' as unknown as Date },
    spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'shop' } },
    ...(phase ? { status: { phase, ...(finishedAt ? { finishedAt } : {}) } } : {}),
  };
}

describe('history', () => {
  it('prunes the oldest finished Operations beyond each limit; Cancelled counts as failed', () => {
    const ops = [
      op('s1', 'Succeeded', '2025-01-01T01:00:00Z'),
      op('s3', 'Succeeded', '2025-01-01T03:00:00Z'),
      op('s2', 'Succeeded', '2025-01-01T02:00:00Z'),
      op('f1', 'Failed', '2025-01-01T01:30:00Z'),
      op('c1', 'Cancelled', '2025-01-01T02:30:00Z'),
      op('run'),
      op('blocked', 'Blocked'),
    ];
    expect(operationsToPrune(ops, { successfulHistoryLimit: 1, failedHistoryLimit: 1 })).toEqual([
      's1',
      's2',
      'f1',
    ]);
    // Defaults 3 and 1.
    expect(operationsToPrune(ops, {})).toEqual(['f1']);
    expect(activeRefs(ops)).toEqual([
      { name: 'blocked', target: 'shop' },
      { name: 'run', target: 'shop' },
    ]);
  });

  it('lastSuccessfulTime takes the latest Succeeded finish and never moves back', () => {
    const ops = [op('a', 'Succeeded', '2025-01-01T01:00:00Z'), op('b', 'Failed', '2025-01-01T05:00:00Z')];
    expect(lastSuccessfulTime(ops, undefined)).toBe('2025-01-01T01:00:00Z');
    expect(lastSuccessfulTime(ops, '2025-01-01T02:00:00Z')).toBe('2025-01-01T02:00:00Z');
    expect(lastSuccessfulTime([], undefined)).toBeUndefined();
  });
});
