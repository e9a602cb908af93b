// The operator's own permissions, as data: what packaging turns into the CSV's permissions and
// clusterPermissions. Everything that WRITES in an application namespace is absent on purpose: it comes
// from a profile RoleBinding there (profiles.ts).
//
// permissions (OPERATOR_NAMESPACE_RULES) hold every rule about namespaced objects: OLM grants them as
// Roles in the operator's namespace and in each namespace the OperatorGroup targets (OwnNamespace,
// SingleNamespace, MultiNamespace install modes), and lifts them to ClusterRoles only for an
// AllNamespaces install (docs/security/rbac.md). clusterPermissions (OPERATOR_CLUSTER_RULES) hold only
// what no Role can grant: access reviews, ClusterRoleBindings, and Velero's children, which live in
// Velero's namespace, not in a watched one. Everywhere the operator only reads and watches, plus: its
// own kinds (status, Operations created by CronOperation/WatchOperation, TTL deletion), access
// reviews, and Events about its own objects. It holds no type verb (backup, restore, …) on
// applicationinstances: the Operations it creates for CronOperations and WatchOperations carry their
// owner's checked authority (docs/adr/0011-scheduled-operations-carry-checked-authority.md).

export interface PolicyRule {
  apiGroups: readonly string[];
  resources: readonly string[];
  verbs: readonly string[];
  /** Why the operator needs it (shown in docs/security/rbac.md). */
  why: string;
}

const READ = ['get', 'list', 'watch'] as const;

/** Cluster-wide (CSV `clusterPermissions`): what no Role can grant. */
export const OPERATOR_CLUSTER_RULES: readonly PolicyRule[] = [
  {
    apiGroups: ['authorization.k8s.io'],
    resources: ['selfsubjectaccessreviews', 'subjectaccessreviews'],
    verbs: ['create'],
    why: 'RbacProfilePresent (own access) and the webhook confused-deputy check (requester access)',
  },
  {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['clusterrolebindings'],
    verbs: ['list', 'watch'],
    why: 'RbacProfileMissing: re-check access when a profile is granted cluster-wide (a ClusterRoleBinding)',
  },
  {
    apiGroups: ['velero.io'],
    resources: ['backups', 'restores'],
    verbs: READ,
    why: 'follow engine children',
  },
  {
    apiGroups: [''],
    resources: ['namespaces'],
    verbs: ['get', 'create', 'delete'],
    why: "a Verify's scratch namespace (ADR 0054): created for the drill under a name derived from the Operation's uid, labelled with it, deleted by that uid when the drill ends; never a namespace it did not create",
  },
];

/**
 * In the operator's namespace and every watched namespace (CSV `permissions`; cluster-wide only for an
 * AllNamespaces install, where OLM lifts them).
 */
export const OPERATOR_NAMESPACE_RULES: readonly PolicyRule[] = [
  {
    apiGroups: ['coordination.k8s.io'],
    resources: ['leases'],
    verbs: ['get', 'create', 'update'],
    why: 'leader election',
  },
  { apiGroups: [''], resources: ['configmaps'], verbs: READ, why: 'the catalog ConfigMaps' },
  {
    apiGroups: ['apps.vworkspace.io'],
    resources: ['applicationinstances'],
    verbs: [...READ, 'patch'],
    why: 'follow instances; project catalog capabilities onto them (Pull mode)',
  },
  {
    apiGroups: ['apps.vworkspace.io'],
    resources: ['applicationinstances/status'],
    verbs: ['get', 'patch', 'update'],
    why: 'write Ready and status.release',
  },
  {
    apiGroups: ['ops.vworkspace.io'],
    resources: ['operations', 'cronoperations', 'watchoperations'],
    verbs: [...READ, 'create', 'patch', 'update', 'delete'],
    why: 'reconcile them; CronOperation/WatchOperation create Operations; ttlSecondsAfterFinished and history limits delete them',
  },
  {
    apiGroups: ['ops.vworkspace.io'],
    resources: ['operations/status', 'cronoperations/status', 'watchoperations/status'],
    verbs: ['get', 'patch', 'update'],
    why: 'write status',
  },
  {
    apiGroups: ['ops.vworkspace.io'],
    resources: ['operations/finalizers', 'cronoperations/finalizers', 'watchoperations/finalizers'],
    verbs: ['update'],
    why: "children and scheduled Operations carry blockOwnerDeletion: true, which the OwnerReferencesPermissionEnforcement admission plugin (on in OpenShift) admits only with update on the owner's finalizers",
  },
  {
    apiGroups: ['events.k8s.io'],
    resources: ['events'],
    verbs: ['create', 'patch'],
    why: 'an Event on every Operation phase change and instance Ready change',
  },
  {
    apiGroups: [''],
    resources: ['secrets'],
    verbs: ['list', 'watch'],
    why: 'metadata-only (PartialObjectMetadata) watches of Helm release records (type=helm.sh/release.v1) and of Secrets an Operation waits for (MissingSecret); the payload of one release record at a time, listed by name, only for a release an ApplicationInstance names in its own namespace. No get. RBAC cannot narrow list/watch to metadata or to a type: docs/security/threat-model.md says what the pod could read',
  },
  {
    apiGroups: [''],
    resources: ['serviceaccounts'],
    verbs: ['list', 'watch'],
    why: 'MissingServiceAccount: wake Operations when the runner ServiceAccount appears',
  },
  {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['rolebindings'],
    verbs: ['list', 'watch'],
    why: 'RbacProfileMissing: re-check access when a profile is granted (a RoleBinding in the namespace)',
  },
  {
    apiGroups: ['batch'],
    resources: ['jobs'],
    verbs: READ,
    why: 'follow engine children (label ops.vworkspace.io/operation) by watch',
  },
  { apiGroups: ['argoproj.io'], resources: ['workflows'], verbs: READ, why: 'follow engine children' },
  {
    apiGroups: ['volsync.backube'],
    resources: ['replicationsources', 'replicationdestinations'],
    verbs: READ,
    why: 'follow engine children',
  },
  {
    apiGroups: ['snapshot.storage.k8s.io'],
    resources: ['volumesnapshots'],
    verbs: READ,
    why: 'follow engine children',
  },
];
