import { describe, expect, it } from 'vitest';
import { controllerDeployment, csvPermissions, VOLSYNC_NAME, volsyncObjects } from './volsync.ts';

const csv = {
  spec: {
    install: {
      spec: {
        clusterPermissions: [
          { rules: [{ apiGroups: ['volsync.backube'], resources: ['replicationsources'], verbs: ['get'] }] },
          { rules: [{ apiGroups: ['batch'], resources: ['jobs'], verbs: ['create'] }] },
        ],
        permissions: [
          { rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get'] }] },
        ],
      },
    },
  },
};

describe('VolSync install', () => {
  it("takes the CSV's cluster and namespaced rules", () => {
    const p = csvPermissions(csv);
    expect(p.cluster.map((r) => r.resources?.[0])).toEqual(['replicationsources', 'jobs']);
    expect(p.namespaced.map((r) => r.resources?.[0])).toEqual(['leases']);
  });

  it('refuses a CSV without cluster permissions (not the VolSync bundle)', () => {
    expect(() => csvPermissions({ spec: {} })).toThrow(/no clusterPermissions/);
  });

  it('binds the rules to the controller ServiceAccount: cluster-wide and in its namespace', () => {
    const objs = volsyncObjects(
      { namespace: 'vs', controllerImage: 'r/volsync@sha256:1', moverImage: 'r/volsync-restic@sha256:2' },
      csvPermissions(csv),
    );
    expect(objs.map((o) => `${o.kind}`)).toEqual([
      'Namespace',
      'ServiceAccount',
      'ClusterRole',
      'ClusterRoleBinding',
      'Role',
      'RoleBinding',
      'Deployment',
    ]);
    const subject = { kind: 'ServiceAccount', name: VOLSYNC_NAME, namespace: 'vs' };
    expect(objs[3]).toMatchObject({
      roleRef: { kind: 'ClusterRole', name: (objs[2] as { metadata: { name: string } }).metadata.name },
      subjects: [subject],
    });
    expect(objs[4]).toMatchObject({
      metadata: { namespace: 'vs' },
      rules: csv.spec.install.spec.permissions[0]?.rules,
    });
    expect(objs[5]).toMatchObject({ roleRef: { kind: 'Role', name: VOLSYNC_NAME }, subjects: [subject] });
  });

  it('without namespaced rules there is no Role', () => {
    const objs = volsyncObjects(
      { namespace: 'vs', controllerImage: 'c', moverImage: 'm' },
      { cluster: csvPermissions(csv).cluster, namespaced: [] },
    );
    expect(objs.map((o) => o.kind)).not.toContain('Role');
  });

  it('the controller is told the restic mover image and its namespace, and runs restricted', () => {
    const d = controllerDeployment('vs', 'r/volsync@sha256:1', 'r/volsync-restic@sha256:2') as {
      spec: {
        template: {
          spec: {
            serviceAccountName: string;
            securityContext: unknown;
            containers: Record<string, unknown>[];
          };
        };
      };
    };
    const pod = d.spec.template.spec;
    expect(pod.serviceAccountName).toBe(VOLSYNC_NAME);
    expect(pod.securityContext).toEqual({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    const [c] = pod.containers;
    expect(c).toMatchObject({
      image: 'r/volsync@sha256:1',
      securityContext: {
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
        readOnlyRootFilesystem: true,
      },
    });
    expect(c?.env).toEqual([
      { name: 'VOLSYNC_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      { name: 'RELATED_IMAGE_RESTIC_CONTAINER', value: 'r/volsync-restic@sha256:2' },
    ]);
    // One replica, no leader election: the flag is absent.
    expect(c?.args).not.toContain('--leader-elect');
  });
});
