// API groups, versions, kinds and resource names of the project's own kinds.
// Everything that builds a URL, a GVK, a RBAC rule or a CRD name reads it from here.

export const APPS_GROUP = 'apps.vworkspace.io';
export const OPS_GROUP = 'ops.vworkspace.io';
export const VERSION_V1ALPHA1 = 'v1alpha1';
export const APPS_API_VERSION = `${APPS_GROUP}/${VERSION_V1ALPHA1}` as const;
export const OPS_API_VERSION = `${OPS_GROUP}/${VERSION_V1ALPHA1}` as const;

/** `kubectl get vworkspace` lists every kind of the project. */
export const CATEGORY = 'vworkspace';

export const KIND_APPLICATION_INSTANCE = 'ApplicationInstance';
export const KIND_OPERATION = 'Operation';
export const KIND_CRON_OPERATION = 'CronOperation';
export const KIND_WATCH_OPERATION = 'WatchOperation';

export const PLURAL_APPLICATION_INSTANCES = 'applicationinstances';
export const PLURAL_OPERATIONS = 'operations';
export const PLURAL_CRON_OPERATIONS = 'cronoperations';
export const PLURAL_WATCH_OPERATIONS = 'watchoperations';

/** Group, version, kind and plural of one resource: what a dynamic client or an informer needs. */
export interface ResourceId {
  readonly group: string;
  readonly version: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly plural: string;
}

export const APPLICATION_INSTANCE: ResourceId = {
  group: APPS_GROUP,
  version: VERSION_V1ALPHA1,
  apiVersion: APPS_API_VERSION,
  kind: KIND_APPLICATION_INSTANCE,
  plural: PLURAL_APPLICATION_INSTANCES,
};
export const OPERATION: ResourceId = {
  group: OPS_GROUP,
  version: VERSION_V1ALPHA1,
  apiVersion: OPS_API_VERSION,
  kind: KIND_OPERATION,
  plural: PLURAL_OPERATIONS,
};
export const CRON_OPERATION: ResourceId = {
  group: OPS_GROUP,
  version: VERSION_V1ALPHA1,
  apiVersion: OPS_API_VERSION,
  kind: KIND_CRON_OPERATION,
  plural: PLURAL_CRON_OPERATIONS,
};
export const WATCH_OPERATION: ResourceId = {
  group: OPS_GROUP,
  version: VERSION_V1ALPHA1,
  apiVersion: OPS_API_VERSION,
  kind: KIND_WATCH_OPERATION,
  plural: PLURAL_WATCH_OPERATIONS,
};

/**
 * Name length limits, enforced by CEL on metadata.name. Names flow into label values (63 characters at
 * most) and into derived names: an Operation's engine child is `<operation>-<hash>` and a batch Job's
 * name must fit a label; a CronOperation's Operations are `<cron>-<unix-minutes>` (8 digits until the
 * year 2160). The same reasoning makes CronJob cap its names at 52 characters.
 */
export const MAX_OPERATION_NAME_LENGTH = 56;
export const MAX_SCHEDULER_NAME_LENGTH = 47;

/** Where velero.io Backups and Restores live unless VELERO_NAMESPACE says otherwise (Velero's own default). */
export const DEFAULT_VELERO_NAMESPACE = 'velero';
