// The velero Verify drill (velero-verify.ts): what it creates, how it reads the restore and the probe, the
// RTO/RPO it measures, and that the scratch namespace goes whatever the outcome.
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { anInput, aVeleroBackup, materialized, withStatus } from '../../../test/support/builders/engines.ts';
import {
  ANNOTATION_BACKUP_COMPLETED_AT,
  FINALIZER_SCRATCH_NAMESPACE,
  LABEL_OPERATION_UID,
  LABEL_SCRATCH_FOR,
} from '../api/annotations.ts';
import type { Operation } from '../api/operation.ts';
import { requiredObjects } from '../catalog/parameters.ts';
import type { Json } from './object.ts';
import type { ChildManifest, EngineEnvironment, MaterializeInput, PodOutcome } from './types.ts';
import { veleroAdapter } from './velero.ts';
import { SCRATCH_PREFIX, scratchNamespace } from './velero-verify.ts';

const PROBE = ['sh', '-c', 'echo rows=42'];
const COMPLETED_AT = '2026-11-28T10:00:00Z';

function backup(
  name = 'nightly-1',
  namespace = 'team-a',
  phase = 'Completed',
): EngineEnvironment['veleroBackup'] {
  return { ...aVeleroBackup(name, namespace)!, phase, completedAt: COMPLETED_AT };
}

function verify(
  o: { parameters?: Record<string, unknown>; backup?: EngineEnvironment['veleroBackup'] | null } = {},
): MaterializeInput {
  return anInput({
    name: 'drill',
    namespace: 'team-a',
    type: 'Verify',
    engine: 'velero',
    parameters: o.parameters ?? { command: PROBE },
    env: o.backup === null ? {} : { veleroBackup: o.backup ?? backup() },
  });
}

/** The children as the API server has them once created (uids), with the Operation recording them. */
function created(input: MaterializeInput): { op: Operation; children: ChildManifest[] } {
  const children = materialized(veleroAdapter.materialize(input));
  const op = structuredClone(input.op);
  op.status = {
    phase: 'Running',
    childRefs: children.map((c, i) => ({
      apiVersion: c.apiVersion,
      kind: c.kind,
      name: c.metadata.name,
      namespace: c.metadata.namespace,
      uid: `uid-${i}`,
    })),
  };
  op.metadata.finalizers = [FINALIZER_SCRATCH_NAMESPACE];
  return { op, children };
}

function kindOf(children: readonly ChildManifest[], kind: string): ChildManifest {
  const c = children.find((x) => x.kind === kind);
  if (!c) throw new Error(`no ${kind}`);
  return c;
}

/** The three children with the given Restore and Job status (uids as recorded). */
function state(
  children: readonly ChildManifest[],
  restore: Record<string, unknown> | undefined,
  job: Record<string, unknown> | undefined,
  suspended = job === undefined,
): KubernetesObject[] {
  const ns = withStatus(kindOf(children, 'Namespace'), { phase: 'Active' }, 'uid-0');
  const r = withStatus(kindOf(children, 'Restore'), restore ?? {}, 'uid-1');
  const j = withStatus(kindOf(children, 'Job'), job ?? {}, 'uid-2') as KubernetesObject & {
    spec: { suspend?: boolean };
  };
  j.spec = { ...j.spec, suspend: suspended };
  return [ns, r, j];
}

const probePod = (exitCode: number, logTail: string): PodOutcome => ({
  pod: 'drill-probe-x',
  container: 'probe',
  exitCode,
  reason: exitCode === 0 ? 'Completed' : 'Error',
  logTail,
});

describe('velero Verify: what it creates', () => {
  it('a scratch namespace named from the uid, a Restore mapped into it, a suspended probe Job', () => {
    const input = verify();
    const result = veleroAdapter.materialize(input);
    const [ns, restore, job] = materialized(result);
    const scratch = scratchNamespace(input.op, 1);
    expect(scratch.startsWith(`${SCRATCH_PREFIX}team-a-`)).toBe(true);
    expect(scratch.length).toBeLessThanOrEqual(63);
    expect(ns).toMatchObject({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: scratch,
        labels: { [LABEL_SCRATCH_FOR]: 'team-a', [LABEL_OPERATION_UID]: input.op.metadata.uid },
      },
    });
    expect(restore).toMatchObject({
      kind: 'Restore',
      metadata: { namespace: 'velero', annotations: { [ANNOTATION_BACKUP_COMPLETED_AT]: COMPLETED_AT } },
      spec: {
        backupName: 'nightly-1',
        includedNamespaces: ['team-a'],
        namespaceMapping: { 'team-a': scratch },
        orLabelSelectors: [{ matchLabels: { 'app.kubernetes.io/instance': 'nextcloud-team-a' } }],
        existingResourcePolicy: 'none',
      },
    });
    expect(job).toMatchObject({ kind: 'Job', metadata: { namespace: 'team-a' }, spec: { suspend: true } });
    const pod = (job as unknown as { spec: { template: { spec: Record<string, unknown> } } }).spec.template
      .spec;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(JSON.stringify(pod)).toContain(`"name":"VWS_SCRATCH_NAMESPACE","value":"${scratch}"`);
    // The finalizer goes on before anything exists, so a deletion cannot leave the namespace behind.
    expect(result.ok && result.prepare).toEqual([
      expect.objectContaining({
        kind: 'patch',
        patch: { metadata: expect.objectContaining({ finalizers: [FINALIZER_SCRATCH_NAMESPACE] }) },
      }),
    ]);
  });

  it('another attempt, another scratch namespace; the name never comes from the request', () => {
    const input = verify();
    expect(scratchNamespace(input.op, 2)).not.toBe(scratchNamespace(input.op, 1));
    // The schema has no such parameter: the webhook denies it (additionalProperties: false).
    expect(() => verify({ parameters: { command: PROBE, namespace: 'kube-system' } })).toThrow();
  });

  it.each([
    [
      'made for another namespace',
      backup('theirs-1', 'team-b'),
      { backupName: 'theirs-1' },
      'BackupNotAllowed',
    ],
    ['missing (no oracle: the same message)', null, { backupName: 'theirs-1' }, 'BackupNotAllowed'],
    ['absent when none was named', null, {}, 'BackupNotAllowed'],
    ['still in progress', backup('nightly-1', 'team-a', 'InProgress'), {}, 'InvalidParameters'],
  ])('refuses a backup %s', (_why, b, params, reason) => {
    const r = veleroAdapter.materialize(verify({ backup: b, parameters: { command: PROBE, ...params } }));
    expect(r).toMatchObject({ ok: false, reason });
  });

  it('the same words for a backup of another namespace and one that does not exist', () => {
    const other = veleroAdapter.materialize(
      verify({
        backup: backup('theirs-1', 'team-b'),
        parameters: { command: PROBE, backupName: 'theirs-1' },
      }),
    );
    const none = veleroAdapter.materialize(
      verify({ backup: null, parameters: { command: PROBE, backupName: 'theirs-1' } }),
    );
    expect(!other.ok && !none.ok && other.message === none.message).toBe(true);
  });

  it('gives the probe its Secret by name only (envFrom), after nothing it could override', () => {
    const [, , job] = materialized(
      veleroAdapter.materialize(verify({ parameters: { command: PROBE, probeSecret: 'shop-db' } })),
    );
    const [container] = (job as unknown as { spec: { template: { spec: { containers: Json[] } } } }).spec
      .template.spec.containers;
    expect(container?.envFrom).toEqual([{ secretRef: { name: 'shop-db' } }]);
    // `env` wins over `envFrom` for the same name: the Secret cannot move the probe to another namespace.
    expect(container?.env).toContainEqual(expect.objectContaining({ name: 'VWS_SCRATCH_NAMESPACE' }));
    const [, , plain] = materialized(veleroAdapter.materialize(verify()));
    expect(JSON.stringify(plain)).not.toContain('envFrom');
  });

  it('a probe Secret is a Secret the drill waits for (RequiredSecretsPresent)', () => {
    const template = verify().template;
    expect(requiredObjects(template, { command: PROBE, probeSecret: 'shop-db' }).secrets).toEqual([
      'shop-db',
    ]);
  });

  it('refuses an image outside the allowlist', () => {
    expect(() => verify({ parameters: { command: PROBE, image: 'evil.example/psql:1' } })).toThrow();
  });
});

describe('velero Verify: following the drill', () => {
  it('restoring, then resuming the probe once the Restore completed', () => {
    const { op, children } = created(verify());
    const restoring = veleroAdapter.observe(state(children, { phase: 'InProgress' }, undefined), {
      op,
      attempt: 1,
    });
    expect(restoring).toMatchObject({ phase: 'Running', reason: 'VerifyRestoreInProgress' });
    const restored = veleroAdapter.observe(state(children, { phase: 'Completed' }, undefined), {
      op,
      attempt: 1,
    });
    expect(restored).toMatchObject({ phase: 'Running', reason: 'VerifyProbeRunning' });
    expect(restored.actions).toEqual([
      expect.objectContaining({ kind: 'patch', patch: { spec: { suspend: false } } }),
    ]);
  });

  it('a probe that passed: the verified backup, the RTO from restore start and the RPO from the backup', () => {
    const { op, children } = created(verify());
    const obs = veleroAdapter.observe(
      state(
        children,
        { phase: 'Completed', startTimestamp: '2026-11-28T12:00:00Z' },
        { completionTime: '2026-11-28T12:02:05Z', conditions: [{ type: 'Complete', status: 'True' }] },
        false,
      ),
      { op, attempt: 1, pods: [probePod(0, 'rows=42')] },
    );
    expect(obs).toMatchObject({
      phase: 'Succeeded',
      reason: 'VerifyPassed',
      outputs: {
        verifiedBackup: 'nightly-1',
        rtoSeconds: '125',
        rpoSeconds: String(2 * 3600 + 125),
        verifiedAt: '2026-11-28T12:02:05Z',
        probeOutput: 'rows=42',
      },
    });
  });

  it('a probe that failed: Failed with what it said, nothing verified', () => {
    const { op, children } = created(verify());
    const obs = veleroAdapter.observe(
      state(
        children,
        { phase: 'Completed' },
        { conditions: [{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded' }] },
        false,
      ),
      { op, attempt: 1, pods: [probePod(1, 'ERROR: relation "orders" does not exist')] },
    );
    expect(obs).toMatchObject({ phase: 'Failed', reason: 'VerifyProbeFailed', retryable: false });
    expect(obs.message).toContain('relation "orders" does not exist');
    expect(obs.outputs).not.toHaveProperty('verifiedBackup');
  });

  it('a restore that failed (damaged backup data): Failed with what Velero said; the probe never runs', () => {
    const { op, children } = created(verify());
    const obs = veleroAdapter.observe(
      state(children, { phase: 'PartiallyFailed', errors: 1, warnings: 0 }, undefined),
      { op, attempt: 1 },
    );
    expect(obs).toMatchObject({ phase: 'Failed', reason: 'VerifyRestoreFailed' });
    expect(obs.message).toContain('PartiallyFailed with 1 error(s)');
    expect(obs.actions).toBeUndefined();
  });
});

describe('velero Verify: the scratch namespace goes whatever the outcome', () => {
  it('clean-up deletes the recorded namespace by its uid, then (gone) takes the finalizer off', () => {
    const { op, children } = created(verify());
    const now = state(children, { phase: 'Completed' }, undefined);
    const first = veleroAdapter.cleanup!(now, op);
    expect(first.pending).toBe(true);
    expect(first.actions).toEqual([expect.objectContaining({ kind: 'delete', uid: 'uid-0' })]);
    const gone = veleroAdapter.cleanup!(
      now.filter((c) => c.kind !== 'Namespace'),
      op,
    );
    expect(gone.pending).toBe(false);
    expect(gone.actions).toEqual([
      expect.objectContaining({
        kind: 'patch',
        patch: { metadata: expect.objectContaining({ finalizers: [] }) },
      }),
    ]);
  });

  it('never deletes a namespace it did not create under that name (another uid)', () => {
    const { op, children } = created(verify());
    const [ns, ...rest] = state(children, { phase: 'Completed' }, undefined);
    const foreign = { ...ns!, metadata: { ...ns!.metadata, uid: 'someone-else' } };
    const r = veleroAdapter.cleanup!([foreign, ...rest], op);
    expect(r.actions.filter((a) => a.kind === 'delete')).toEqual([]);
  });

  it('a namespace already being deleted is not deleted again, and the finalizer comes off', () => {
    const { op, children } = created(verify());
    const [ns, ...rest] = state(children, { phase: 'Completed' }, undefined);
    const deleting = { ...ns!, metadata: { ...ns!.metadata, deletionTimestamp: new Date() } };
    const r = veleroAdapter.cleanup!([deleting, ...rest], op);
    expect(r.pending).toBe(false);
    expect(r.actions.map((a) => a.kind)).toEqual(['patch']);
  });

  it('cancel stops the probe, drops the Restore and the namespace', () => {
    const { op, children } = created(verify());
    const actions = veleroAdapter.cancel(state(children, { phase: 'InProgress' }, undefined), {
      op,
      attempt: 1,
    });
    expect(actions.map((a) => (a.kind === 'delete' ? a.child.kind : a.kind)).sort()).toEqual([
      'Job',
      'Namespace',
      'Restore',
    ]);
  });
});
