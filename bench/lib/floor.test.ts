import { describe, expect, it } from 'vitest';
import { FLOOR_LABEL, floorJob, floorOperation, floorStatus, floorTemplate } from './floor.ts';

/** A child Job as the API server returns it: generated selector and labels, the owner's uid. */
function readBack() {
  return {
    metadata: {
      name: 'rc-app0-run',
      uid: 'job-uid',
      labels: {
        'ops.vworkspace.io/operation': 'rc-app0',
        'batch.kubernetes.io/controller-uid': 'job-uid',
        'batch.kubernetes.io/job-name': 'rc-app0-run',
        'controller-uid': 'job-uid',
        'job-name': 'rc-app0-run',
      },
      ownerReferences: [{ kind: 'Operation', name: 'rc-app0', uid: 'op-uid', controller: true }],
    },
    spec: {
      backoffLimit: 0,
      selector: { matchLabels: { 'batch.kubernetes.io/controller-uid': 'job-uid' } },
      template: {
        metadata: {
          labels: {
            'ops.vworkspace.io/operation': 'rc-app0',
            'batch.kubernetes.io/controller-uid': 'job-uid',
            'job-name': 'rc-app0-run',
          },
        },
        spec: { restartPolicy: 'Never', containers: [{ name: 'run', image: 'busybox' }] },
      },
    },
  };
}

const status = { phase: 'Succeeded', childRef: { kind: 'Job', name: 'rc-app0-run' } };

describe('the floor built from what the operator wrote', () => {
  const t = floorTemplate('rc-app0', readBack(), status);

  it('makes a Job the API server accepts for another Operation: no generated selector or labels, its owner', () => {
    const job = floorJob(t, 'fl-app7', 'ops-r1', 'floor-uid') as {
      metadata: {
        name: string;
        namespace: string;
        labels: Record<string, string>;
        ownerReferences: unknown[];
      };
      spec: { selector?: unknown; template: { metadata: { labels: Record<string, string> } } };
    };
    expect(job.metadata.name).toBe('fl-app7');
    expect(job.metadata.namespace).toBe('ops-r1');
    expect(job.spec.selector).toBeUndefined();
    expect(job.metadata.labels).toEqual({ 'ops.vworkspace.io/operation': 'fl-app7', [FLOOR_LABEL]: 'true' });
    expect(job.spec.template.metadata.labels).toEqual({
      'ops.vworkspace.io/operation': 'fl-app7',
      [FLOOR_LABEL]: 'true',
    });
    expect(job.metadata.ownerReferences).toEqual([
      { kind: 'Operation', name: 'fl-app7', uid: 'floor-uid', controller: true },
    ]);
    expect(JSON.stringify(job)).not.toContain('rc-app0');
  });

  it('applies the operator status under the new name, and labels the Operation', () => {
    expect(floorStatus(t, 'fl-app7', 'ops-r1')).toEqual({
      apiVersion: 'ops.vworkspace.io/v1alpha1',
      kind: 'Operation',
      metadata: { name: 'fl-app7', namespace: 'ops-r1' },
      status: { phase: 'Succeeded', childRef: { kind: 'Job', name: 'fl-app7-run' } },
    });
    const op = floorOperation('fl-app7', 'ops-r1', 'app7') as {
      metadata: { labels: Record<string, string> };
      spec: { targetRef: { name: string } };
    };
    expect(op.metadata.labels).toEqual({ [FLOOR_LABEL]: 'true' });
    expect(op.spec.targetRef.name).toBe('app7');
  });

  it('refuses to build from an Operation without a child or a status', () => {
    expect(() => floorTemplate('rc-app0', {}, status)).toThrow(/no child Job or status of rc-app0/);
    expect(() => floorTemplate('rc-app0', readBack(), undefined)).toThrow(/no child Job or status/);
  });
});
