import { describe, expect, it } from 'vitest';
import { RBAC_PROFILES } from '../api/enums.ts';
import { BUILTIN_TEMPLATES } from '../catalog/templates/index.ts';
import { profileClusterRole, profileClusterRoleFileName } from './clusterroles.ts';
import {
  LABEL_RBAC_PROFILE,
  profileChecks,
  profileClusterRoleName,
  RBAC_PROFILE_DEFINITIONS,
  rbacProfile,
} from './profiles.ts';

describe('RBAC profiles', () => {
  it('define every stable id, and every built-in template names one', () => {
    expect(Object.keys(RBAC_PROFILE_DEFINITIONS).sort()).toEqual([...RBAC_PROFILES].sort());
    for (const t of BUILTIN_TEMPLATES) expect(rbacProfile(t.rbacProfile), t.name).toBeDefined();
  });

  it('checks each rule and verb in the namespace it applies in', () => {
    const checks = profileChecks(rbacProfile('restore.velero')!, { target: 'team', velero: 'velero' });
    expect(new Set(checks.map((c) => c.namespace))).toEqual(new Set(['velero']));
    expect(checks).toContainEqual({
      namespace: 'velero',
      group: 'velero.io',
      resource: 'restores',
      verb: 'create',
    });
    expect(checks).toContainEqual({
      namespace: 'velero',
      group: 'velero.io',
      resource: 'backups',
      verb: 'get',
    });
    // Cancelling a velero Backup files a DeleteBackupRequest by server-side apply.
    const backup = profileChecks(rbacProfile('backup.velero')!, { target: 'team', velero: 'velero' });
    for (const verb of ['create', 'patch'])
      expect(backup).toContainEqual({
        namespace: 'velero',
        group: 'velero.io',
        resource: 'deletebackuprequests',
        verb,
      });
    const pvc = profileChecks(rbacProfile('backup.snapshot')!, { target: 'team', velero: 'velero' });
    expect(pvc).toContainEqual({
      namespace: 'team',
      group: '',
      resource: 'persistentvolumeclaims',
      verb: 'list',
    });
  });

  it('render as labelled ClusterRoles named for the bundle', () => {
    const p = rbacProfile('migration.helmHookJob')!;
    expect(profileClusterRoleName(p.id)).toBe('vworkspace-profile-migration-helmhookjob');
    expect(profileClusterRoleFileName(p)).toBe(
      'vworkspace-profile-migration-helmhookjob_rbac.authorization.k8s.io_v1_clusterrole.yaml',
    );
    const role = profileClusterRole(p) as { metadata: { labels: Record<string, string> }; rules: unknown[] };
    expect(role.metadata.labels).toEqual({ [LABEL_RBAC_PROFILE]: 'migration.helmHookJob' });
    expect(role.rules).toEqual([
      {
        apiGroups: ['batch'],
        resources: ['jobs'],
        verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'],
      },
      // Rules of one core resource set with equal verbs are merged: configmaps and pods/log (get).
      { apiGroups: [''], resources: ['configmaps', 'pods/log'], verbs: ['get'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] },
    ]);
  });
});
