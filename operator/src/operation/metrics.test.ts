import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { Operation } from '../api/index.ts';
import { OperationMetrics } from './metrics.ts';

function blocked(name: string, namespace: string, reason: string, since: string): Operation {
  return {
    apiVersion: 'ops.vworkspace.io/v1alpha1',
    kind: 'Operation',
    metadata: { name, namespace },
    spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'shop' } },
    status: {
      phase: 'Blocked',
      conditions: [{ type: 'Blocked', status: 'True', reason, message: '', lastTransitionTime: since }],
    },
  };
}

describe('vworkspace_operations_blocked_oldest_seconds', () => {
  it('is the wait of the longest-Blocked Operation per namespace and reason, at scrape time', async () => {
    const now = Date.now();
    const ago = (s: number) => new Date(now - s * 1000).toISOString();
    const ops = [
      blocked('a', 'team', 'AwaitingApproval', ago(7200)),
      blocked('b', 'team', 'AwaitingApproval', ago(60)),
      blocked('c', 'other', 'TargetNotReady', ago(30)),
    ];
    const registry = new Registry();
    const m = new OperationMetrics(registry, () => ops);
    const values = (await m.blockedOldest.get()).values.map((v) => [
      v.labels.namespace,
      v.labels.reason,
      Math.round(v.value / 10) * 10,
    ]);
    expect(values).toEqual([
      ['team', 'AwaitingApproval', 7200],
      ['other', 'TargetNotReady', 30],
    ]);
    ops.length = 0;
    expect((await m.blockedOldest.get()).values).toEqual([]);
  });
});

describe('vworkspace_operations_rollback_failed', () => {
  it('is 1 for each Operation that ended Failed/RollbackFailed while it exists, nothing for other failures', async () => {
    const ended = (name: string, reason: string): Operation => ({
      apiVersion: 'ops.vworkspace.io/v1alpha1',
      kind: 'Operation',
      metadata: { name, namespace: 'team' },
      spec: { type: 'Upgrade', engine: 'helm', targetRef: { name: 'shop' } },
      status: {
        phase: 'Failed',
        conditions: [
          {
            type: 'Succeeded',
            status: 'False',
            reason,
            message: '',
            lastTransitionTime: new Date().toISOString(),
          },
        ],
      },
    });
    const ops = [ended('up-1', 'RollbackFailed'), ended('up-2', 'PostCheckFailed')];
    const m = new OperationMetrics(new Registry(), () => ops);
    expect((await m.rollbackFailed.get()).values.map((v) => [v.labels, v.value])).toEqual([
      [{ namespace: 'team', operation: 'up-1', applicationinstance: 'shop' }, 1],
    ]);
    ops.length = 0;
    expect((await m.rollbackFailed.get()).values).toEqual([]);
  });
});
