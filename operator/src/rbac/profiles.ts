// RBAC profiles as data: for each stable profile id (DESIGN §3), the rules the operator needs and the
// namespace each rule applies in. One table feeds three consumers:
//   - the RbacProfilePresent precondition (a SelfSubjectAccessReview per rule and verb, as the operator);
//   - hack/generate.ts, which writes one ClusterRole per profile into bundle/manifests/;
//   - docs/security/rbac.md, which shows the same rules to the people who grant them.
//
// Granting a profile in a namespace is one RoleBinding of the profile's ClusterRole to the operator's
// ServiceAccount there. Rules with `scope: 'velero'` apply in the Velero namespace (where velero.io Backups
// and Restores live): the Velero profiles are bound there, once per cluster; which tenant may back up
// what is decided per namespace by the webhook's SubjectAccessReview of the requester.
import { type BuiltinRbacProfile, RBAC_PROFILES } from '../api/enums.ts';

/** Where a rule applies: the Operation's (= the target's) namespace, or the Velero namespace. */
export type RuleScope = 'target' | 'velero';

export interface ProfileRule {
  /** '' for the core group. */
  apiGroup: string;
  resource: string;
  verbs: readonly string[];
  scope: RuleScope;
}

export interface RbacProfile {
  id: BuiltinRbacProfile;
  description: string;
  rules: readonly ProfileRule[];
}

import { LABEL_RBAC_PROFILE } from '../api/annotations.ts';
export { LABEL_RBAC_PROFILE };

// Server-side apply needs `patch`, and `create` when the apply creates the object; `delete` cancels
// (Jobs) and cleans up; get/list/watch read the children back.
const WRITE = ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'] as const;
const READ = ['get', 'list', 'watch'] as const;

const rule = (apiGroup: string, resource: string, verbs: readonly string[], scope: RuleScope = 'target') => ({
  apiGroup,
  resource,
  verbs,
  scope,
});

const PVC_READ = rule('', 'persistentvolumeclaims', ['get', 'list']);
/** A finished child Job's pod: its exit code (pods) and log tail (pods/log), for the condition. */
const POD_OUTCOME = [rule('', 'pods', ['get', 'list']), rule('', 'pods/log', ['get'])];

export const RBAC_PROFILE_DEFINITIONS: Readonly<Record<BuiltinRbacProfile, RbacProfile>> = {
  'backup.velero': {
    id: 'backup.velero',
    description:
      "Create and follow velero.io Backups in the Velero namespace; on cancel, and for a CronOperation's spec.retention, delete a Backup with a DeleteBackupRequest.",
    rules: [
      rule('velero.io', 'backups', WRITE, 'velero'),
      // cancel files a DeleteBackupRequest by server-side apply (patch, and create when it is new);
      // retention creates one and reads it back (get) when it exists already.
      rule('velero.io', 'deletebackuprequests', ['get', 'create', 'patch'], 'velero'),
    ],
  },
  'restore.velero': {
    id: 'restore.velero',
    description: 'Create and follow velero.io Restores (from existing Backups) in the Velero namespace.',
    rules: [rule('velero.io', 'restores', WRITE, 'velero'), rule('velero.io', 'backups', READ, 'velero')],
  },
  'verify.velero': {
    id: 'verify.velero',
    description:
      "Restore drills: create and follow velero.io Restores into the drill's scratch namespace (read the Backups in the Velero namespace); run the probe Job in the namespace and read its pod's exit code and log tail. Creating and deleting the scratch namespace is the operator's own cluster permission.",
    rules: [
      rule('velero.io', 'restores', WRITE, 'velero'),
      rule('velero.io', 'backups', READ, 'velero'),
      rule('batch', 'jobs', WRITE),
      ...POD_OUTCOME,
    ],
  },
  'upgrade.helm': {
    id: 'upgrade.helm',
    description:
      "Run the helm CLI runner Job (as the namespace runner ServiceAccount) in the namespace; read its pod's exit code and log tail (helm's error); resume the rollback Job and stop the chart's hook Jobs an abandoned upgrade left running.",
    rules: [rule('batch', 'jobs', WRITE), ...POD_OUTCOME],
  },
  'safeUpgrade.helm': {
    id: 'safeUpgrade.helm',
    description:
      "Safe Upgrade (a helm Upgrade template with safety, ADR 0055): everything upgrade.helm needs, the post-check Job, a VolumeSnapshot of each of the release's claims before the upgrade, and, when the upgrade or the check fails, what restore.snapshot needs to recreate the claims from them.",
    rules: [
      rule('batch', 'jobs', WRITE),
      ...POD_OUTCOME,
      rule('snapshot.storage.k8s.io', 'volumesnapshots', WRITE),
      rule('', 'configmaps', ['create']),
      rule('', 'persistentvolumeclaims', ['get', 'list', 'create', 'delete']),
      rule('apps', 'deployments', ['get', 'list']),
      rule('apps', 'statefulsets', ['get', 'list']),
      rule('apps', 'deployments/scale', ['patch']),
      rule('apps', 'statefulsets/scale', ['patch']),
    ],
  },
  'migration.helmHookJob': {
    id: 'migration.helmHookJob',
    description:
      "Run the chart's Helm hook Jobs (from the release record) or a ConfigMap's Job in the namespace; read their pods' exit code and log tail.",
    rules: [rule('batch', 'jobs', WRITE), rule('', 'configmaps', ['get']), ...POD_OUTCOME],
  },
  'runCommand.job': {
    id: 'runCommand.job',
    description:
      "Run a command Job (allowlisted image, runner ServiceAccount) in the namespace; read its pod's exit code and log tail.",
    rules: [rule('batch', 'jobs', WRITE), ...POD_OUTCOME],
  },
  'runbook.workflow': {
    id: 'runbook.workflow',
    description: 'Submit and stop Argo Workflows from WorkflowTemplates in the namespace.',
    rules: [rule('argoproj.io', 'workflows', WRITE), rule('argoproj.io', 'workflowtemplates', ['get'])],
  },
  'backup.volsync': {
    id: 'backup.volsync',
    description: "Create VolSync ReplicationSources for the release's PersistentVolumeClaims.",
    rules: [rule('volsync.backube', 'replicationsources', WRITE), PVC_READ],
  },
  'restore.volsync': {
    id: 'restore.volsync',
    description: "Create VolSync ReplicationDestinations for the release's PersistentVolumeClaims.",
    rules: [rule('volsync.backube', 'replicationdestinations', WRITE), PVC_READ],
  },
  'verify.volsync': {
    id: 'verify.volsync',
    description:
      "Restore drills of restic backups: create a claim per claim of the release and a VolSync ReplicationDestination restoring into it (the repository Secret stays where it is), run the probe Job on the restored claims and read its pod's exit code and log tail; delete the claims and ReplicationDestinations when the drill ends.",
    rules: [
      rule('volsync.backube', 'replicationdestinations', WRITE),
      rule('', 'persistentvolumeclaims', ['get', 'list', 'create', 'delete']),
      rule('batch', 'jobs', WRITE),
      ...POD_OUTCOME,
    ],
  },
  'backup.snapshot': {
    id: 'backup.snapshot',
    description:
      "Create CSI VolumeSnapshots of the release's PersistentVolumeClaims; release them from the Operation once complete (patch); delete those a CronOperation's spec.retention lets go.",
    rules: [rule('snapshot.storage.k8s.io', 'volumesnapshots', WRITE), PVC_READ],
  },
  'restore.snapshot': {
    id: 'restore.snapshot',
    description:
      "Recreate the release's PersistentVolumeClaims from CSI VolumeSnapshots: write the restore plan (a ConfigMap), scale the release's Deployments and StatefulSets through /scale only, see which pods mount the claims, delete and create the claims.",
    rules: [
      // The plan: created once (immutable), read back through the operator's own ConfigMap watch.
      rule('', 'configmaps', ['create']),
      rule('', 'persistentvolumeclaims', ['get', 'list', 'create', 'delete']),
      rule('', 'pods', ['list']),
      rule('apps', 'deployments', ['get', 'list']),
      rule('apps', 'statefulsets', ['get', 'list']),
      rule('apps', 'deployments/scale', ['patch']),
      rule('apps', 'statefulsets/scale', ['patch']),
      rule('snapshot.storage.k8s.io', 'volumesnapshots', ['get', 'list']),
    ],
  },
  'verify.snapshot': {
    id: 'verify.snapshot',
    description:
      "Restore drills of snapshot Backups: read the namespace's VolumeSnapshots and the release's claims, create claims from the VolumeSnapshots (and delete them when the drill ends), run the probe Job that mounts them and read its pod's exit code and log tail. No VolumeSnapshot is written.",
    rules: [
      rule('snapshot.storage.k8s.io', 'volumesnapshots', ['get', 'list']),
      rule('', 'persistentvolumeclaims', ['get', 'list', 'create', 'delete']),
      rule('batch', 'jobs', WRITE),
      ...POD_OUTCOME,
    ],
  },
};

export const RBAC_PROFILE_LIST: readonly RbacProfile[] = RBAC_PROFILES.map(
  (id) => RBAC_PROFILE_DEFINITIONS[id],
);

export function rbacProfile(id: string): RbacProfile | undefined {
  return (RBAC_PROFILE_DEFINITIONS as Record<string, RbacProfile>)[id];
}

/** Name of the ClusterRole a profile ships as: `vworkspace-profile-backup-velero`. */
export function profileClusterRoleName(id: string): string {
  return `vworkspace-profile-${id.replace(/\./g, '-').toLowerCase()}`;
}

export interface AccessAttributes {
  namespace: string;
  group: string;
  resource: string;
  verb: string;
}

/** Every (namespace, group, resource, verb) a profile needs for an Operation in `namespace`. */
export function profileChecks(
  profile: RbacProfile,
  namespaces: { target: string; velero: string },
): AccessAttributes[] {
  const out: AccessAttributes[] = [];
  for (const r of profile.rules) {
    for (const verb of r.verbs) {
      out.push({ namespace: namespaces[r.scope], group: r.apiGroup, resource: r.resource, verb });
    }
  }
  return out;
}

/** kubectl-style text of one missing permission, for messages: `create jobs.batch in ns`. */
export function describeAccess(a: AccessAttributes): string {
  return `${a.verb} ${a.group ? `${a.resource}.${a.group}` : a.resource} in ${a.namespace}`;
}

/** Where a profile must be bound (the namespaces its rules apply in), for messages and docs. */
export function profileNamespaces(
  profile: RbacProfile,
  namespaces: { target: string; velero: string },
): string[] {
  return [...new Set(profile.rules.map((r) => namespaces[r.scope]))];
}
