// The state machine and an engine's clean-up (EngineAdapter.cleanup, decide.ts withCleanup): a Verify
// drill's scratch namespace is deleted in the decision that ends the Operation, whatever ended it, and
// looked at again until its deletion has begun; then the finalizer comes off.
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { instance, operation } from '../../../test/support/builders/operation.ts';
import {
  FINALIZER_SCRATCH_NAMESPACE,
  LABEL_INSTANCE,
  LABEL_OPERATION_NAMESPACE,
} from '../api/annotations.ts';
import type { Operation } from '../api/operation.ts';
import { BUILTIN_TEMPLATES } from '../catalog/templates/index.ts';
import type { CancelAction, EngineEnvironment } from '../engines/types.ts';
import { veleroAdapter } from '../engines/velero.ts';
import { CLEANUP_RECHECK_MS, type Decision, decide } from './decide.ts';
import type { PreconditionFacts } from './preconditions.ts';

const NOW = Date.parse('2025-01-01T12:00:00Z');
const env: EngineEnvironment = {
  veleroNamespace: 'velero',
  veleroBackup: {
    name: 'nightly-1',
    labels: { [LABEL_OPERATION_NAMESPACE]: 'team', [LABEL_INSTANCE]: 'app' },
    phase: 'Completed',
    completedAt: '2025-01-01T00:00:00Z',
  },
};
const facts: PreconditionFacts = {
  now: new Date(NOW),
  target: instance(),
  rbac: { allowed: true },
  operations: [],
  secrets: new Set(),
  serviceAccounts: new Set(),
};

function step(op: Operation, children: readonly KubernetesObject[], now = NOW): Decision {
  return decide({
    op,
    now,
    templates: BUILTIN_TEMPLATES,
    facts,
    target: instance(),
    adapter: veleroAdapter,
    env,
    children,
  });
}

/** The drill started: its children as the API server returns them (uids), the Operation recording them. */
function started(spec: Partial<Operation['spec']> = {}): { op: Operation; children: KubernetesObject[] } {
  const op = operation('drill', {
    type: 'Verify',
    engine: 'velero',
    parameters: { command: ['true'] },
    policy: { activeDeadlineSeconds: 600 },
    ...spec,
  });
  const first = step(op, []);
  expect(first.create?.map((c) => c.kind)).toEqual(['Namespace', 'Restore', 'Job']);
  expect(first.prepare?.[0]).toMatchObject({ kind: 'patch' });
  const children = (first.create ?? []).map((c, i) => ({
    ...structuredClone(c),
    metadata: { ...c.metadata, uid: `u${i}` },
  }));
  const status = {
    ...first.status,
    childRefs: children.map((c, i) => ({
      apiVersion: c.apiVersion,
      kind: c.kind,
      name: c.metadata.name,
      namespace: c.metadata.namespace,
      uid: `u${i}`,
    })),
  };
  return {
    op: { ...op, metadata: { ...op.metadata, finalizers: [FINALIZER_SCRATCH_NAMESPACE] }, status },
    children,
  };
}

const deletes = (actions: readonly CancelAction[] | undefined) =>
  (actions ?? []).flatMap((a) => (a.kind === 'delete' ? [`${a.child.kind}/${a.uid ?? ''}`] : []));

describe('a Verify drill ends with its scratch namespace deleted', () => {
  it('a failed restore: Failed, and the same decision deletes the namespace; looked at again until it goes', () => {
    const { op, children } = started();
    const restore = children.find((c) => c.kind === 'Restore') as KubernetesObject & { status?: unknown };
    restore.status = {
      phase: 'Failed',
      failureReason: 'error to initialize data path: repository is damaged',
    };
    const d = step(op, children);
    expect(d.status.phase).toBe('Failed');
    expect(d.status.conditions?.find((c) => c.type === 'Succeeded')).toMatchObject({
      reason: 'VerifyRestoreFailed',
    });
    expect(d.status.conditions?.find((c) => c.type === 'Succeeded')?.message).toContain(
      'repository is damaged',
    );
    expect(deletes(d.actions)).toEqual(['Namespace/u0']);
    expect(d.requeueAfterMs).toBeLessThanOrEqual(CLEANUP_RECHECK_MS);
  });

  it('the deadline: Failed/DeadlineExceeded, the probe, the Restore and the namespace deleted', () => {
    const { op, children } = started();
    const d = step(op, children, NOW + 601_000);
    expect(d.status.conditions?.find((c) => c.type === 'Succeeded')).toMatchObject({
      reason: 'DeadlineExceeded',
    });
    expect(deletes(d.cancel).sort()).toEqual(['Job/', 'Namespace/u0', 'Restore/']);
  });

  it('cancel: the children deleted; once the Restore is gone and the namespace going, Cancelled', () => {
    const { op, children } = started();
    const cancelled = { ...op, spec: { ...op.spec, cancel: true } };
    const stopping = step(cancelled, children);
    expect(stopping.status.phase).toBe('Running');
    expect(deletes(stopping.cancel)).toContain('Namespace/u0');
    const ns = children.find((c) => c.kind === 'Namespace')!;
    const going = { ...ns, metadata: { ...ns.metadata, deletionTimestamp: new Date(NOW) } };
    const done = step({ ...cancelled, status: stopping.status }, [going]);
    expect(done.status.phase).toBe('Cancelled');
  });

  it('an ended drill whose namespace is being deleted: the finalizer comes off, nothing more to wait for', () => {
    const { op, children } = started();
    const ended: Operation = {
      ...op,
      status: { ...op.status, phase: 'Failed', finishedAt: '2025-01-01T12:00:00Z' },
    };
    const ns = children.find((c) => c.kind === 'Namespace')!;
    const going = { ...ns, metadata: { ...ns.metadata, deletionTimestamp: new Date(NOW) } };
    const d = step(ended, [going, ...children.filter((c) => c !== ns)]);
    expect(d.actions).toEqual([
      expect.objectContaining({
        kind: 'patch',
        patch: { metadata: expect.objectContaining({ finalizers: [] }) },
      }),
    ]);
    expect(d.requeueAfterMs).toBeUndefined();
  });
});
