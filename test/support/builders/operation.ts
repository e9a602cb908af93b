// Test builders for the Operation reconciler, and a small fake engine adapter whose child is a ConfigMap:
// the test moves it by writing data.phase (Running | Succeeded | Failed), data.retryable and data.output.
// It lets the reconciler be tested end to end (also on a real API server) without any engine's CRDs.
import { createHash } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ApplicationInstance } from '../../../operator/src/api/applicationinstance.ts';
import { APPLICATION_INSTANCE, OPERATION } from '../../../operator/src/api/constants.ts';
import type { Engine, OperationType } from '../../../operator/src/api/enums.ts';
import type { Operation, OperationSpec } from '../../../operator/src/api/operation.ts';
import type { EngineAdapter, Observation } from '../../../operator/src/engines/types.ts';

export function operation(
  name: string,
  spec: Partial<OperationSpec> = {},
  extra: { namespace?: string; created?: string; annotations?: Record<string, string>; uid?: string } = {},
): Operation {
  return {
    apiVersion: OPERATION.apiVersion,
    kind: OPERATION.kind,
    metadata: {
      name,
      namespace: extra.namespace ?? 'team',
      uid: extra.uid ?? `uid-${name}`,
      generation: 1,
      creationTimestamp: (extra.created ?? '2025-01-01T00:00:00Z') as unknown as Date,
      ...(extra.annotations ? { annotations: extra.annotations } : {}),
    },
    spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'app' }, ...spec },
  };
}

export function instance(
  name = 'app',
  opts: {
    namespace?: string;
    capabilities?: Record<string, string>;
    labels?: Record<string, string>;
    ready?: boolean | string;
    catalogId?: string;
  } = {},
): ApplicationInstance {
  const caps = opts.capabilities ?? { backup: 'velero', restore: 'velero', upgrade: 'helm' };
  const ready = opts.ready ?? true;
  return {
    apiVersion: APPLICATION_INSTANCE.apiVersion,
    kind: APPLICATION_INSTANCE.kind,
    metadata: {
      name,
      namespace: opts.namespace ?? 'team',
      annotations: Object.fromEntries(Object.entries(caps).map(([v, e]) => [`ops.vworkspace.io/${v}`, e])),
      ...(opts.labels ? { labels: opts.labels } : {}),
    },
    spec: {
      appRef: {
        catalogId: opts.catalogId ?? 'demo',
        chart: { sourceType: 'oci', url: 'oci://example.com/charts', name: 'demo', version: '1.0.0' },
      },
      release: { name },
    },
    status: {
      conditions: [
        {
          type: 'Ready',
          status: ready === true ? 'True' : 'False',
          reason: ready === true ? 'ReleaseDeployed' : typeof ready === 'string' ? ready : 'ReleaseFailed',
          message: 'test',
          lastTransitionTime: '2025-01-01T00:00:00Z',
        },
      ],
    },
  } as ApplicationInstance;
}

/** An Operation with a status, for conflict and queue tests. */
export function withPhase(
  op: Operation,
  phase: NonNullable<Operation['status']>['phase'],
  blockedReason?: string,
) {
  return {
    ...op,
    status: {
      phase,
      ...(blockedReason
        ? {
            conditions: [
              {
                type: 'Blocked',
                status: 'True' as const,
                reason: blockedReason,
                message: '',
                lastTransitionTime: '2025-01-01T00:00:00Z',
              },
            ],
          }
        : {}),
    },
  } as Operation;
}

export const FAKE_CHILD_KIND = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps' };

/** The fake child's name for an Operation and attempt: `<op>-<5 hex>`. */
export function fakeChildName(op: Operation, attempt: number): string {
  const h = createHash('sha256')
    .update(`${op.metadata.namespace}/${op.metadata.name}/${attempt}`)
    .digest('hex')
    .slice(0, 5);
  return `${op.metadata.name}-${h}`;
}

/** A fake adapter: one ConfigMap child per attempt; cancel deletes it (or does nothing: cancelNone). */
export function fakeAdapter(
  engine: Engine,
  types: readonly OperationType[] = ['Backup', 'Restore', 'Upgrade', 'Migration', 'RunCommand', 'Runbook'],
  opts: { cancelNone?: boolean } = {},
): EngineAdapter {
  return {
    engine,
    types,
    childKinds: [FAKE_CHILD_KIND],
    materialize({ op, parameters, attempt }) {
      return {
        ok: true,
        children: [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: fakeChildName(op, attempt), namespace: op.metadata.namespace ?? '' },
            data: { phase: 'Running', parameters: JSON.stringify(parameters) },
          },
        ],
      };
    },
    observe(children: readonly KubernetesObject[]): Observation {
      const data = ((children[0] as { data?: Record<string, string> } | undefined)?.data ?? {}) as Record<
        string,
        string
      >;
      const phase = data.phase === 'Succeeded' || data.phase === 'Failed' ? data.phase : 'Running';
      const reason =
        phase === 'Running' ? 'JobRunning' : phase === 'Succeeded' ? 'JobSucceeded' : 'JobFailed';
      return {
        phase,
        reason,
        message: `fake child is ${phase}`,
        ...(data.output ? { outputs: { result: data.output } } : {}),
        ...(phase === 'Failed' ? { retryable: data.retryable !== 'false' } : {}),
      };
    },
    cancel(children) {
      if (opts.cancelNone) return [{ kind: 'none' }];
      return children.map((c) => ({ kind: 'delete', child: c as never }));
    },
  };
}

/** An Operation that ran: `phase` with startedAt/finishedAt, its template and outputs (history tests). */
export function ran(
  op: Operation,
  phase: 'Running' | 'Succeeded' | 'Failed' | 'Cancelled',
  o: { startedAt?: string; outputs?: Record<string, string>; template?: string; reason?: string } = {},
): Operation {
  const startedAt = o.startedAt ?? '2025-01-01T10:00:00Z';
  const done = phase !== 'Running';
  return {
    ...op,
    status: {
      phase,
      startedAt,
      ...(done ? { finishedAt: startedAt } : {}),
      ...(o.template ? { template: o.template } : {}),
      ...(o.outputs ? { outputs: o.outputs } : {}),
      ...(done
        ? {
            conditions: [
              {
                type: 'Succeeded',
                status: phase === 'Succeeded' ? ('True' as const) : ('False' as const),
                reason: o.reason ?? (phase === 'Succeeded' ? 'JobSucceeded' : 'JobFailed'),
                message: '',
                lastTransitionTime: startedAt,
              },
            ],
          }
        : {}),
    },
  } as Operation;
}
