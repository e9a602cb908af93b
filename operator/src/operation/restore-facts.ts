// What a snapshot Restore acts on, read on every reconcile until it ends (EngineEnvironment.restore): the
// release's claims and workloads (label app.kubernetes.io/instance), the namespace's pods (any may mount a
// claim) and, while the plan is still to be made, the namespace's VolumeSnapshots to choose from. Read from the API
// server, not a cache: each step is decided on the cluster as it is (a claim deleted a moment ago must not
// be deleted again under its new uid). RBAC: the restore.snapshot profile.
import type { KubernetesObject } from '@kubernetes/client-node';
import { type KubeClient, resourcePath, statusCode } from '@vworkspace/runtime';
import { LABEL_HELM_INSTANCE, LABEL_INSTANCE } from '../api/annotations.ts';
import type { RestoreFacts } from '../engines/types.ts';

async function list(
  client: KubeClient,
  r: { group: string; version: string; plural: string; namespace: string },
  labelSelector: string | undefined,
  kind: string,
  signal: AbortSignal,
): Promise<KubernetesObject[]> {
  const res = await client.request<{ items?: KubernetesObject[] }>({
    method: 'GET',
    path: resourcePath(r),
    ...(labelSelector ? { query: { labelSelector } } : {}),
    signal,
  });
  // Items of a List carry no kind; the workloads need theirs.
  return (res.items ?? []).map((o) => ({ ...o, kind }));
}

/**
 * undefined when the operator may not read them (403): RbacProfilePresent reports the missing grant before
 * anything is made, and a running restore waits, saying it cannot look.
 */
export async function readRestoreFacts(
  client: KubeClient,
  namespace: string,
  o: { release: string; withSnapshots: boolean },
  signal: AbortSignal,
): Promise<RestoreFacts | undefined> {
  try {
    return await read(client, namespace, o, signal);
  } catch (err) {
    if (statusCode(err) === 403) return undefined;
    throw err;
  }
}

async function read(
  client: KubeClient,
  namespace: string,
  o: { release: string; withSnapshots: boolean },
  signal: AbortSignal,
): Promise<RestoreFacts> {
  const release = `${LABEL_HELM_INSTANCE}=${o.release}`;
  const core = { group: '', version: 'v1', namespace };
  const apps = { group: 'apps', version: 'v1', namespace };
  const [pvcs, deployments, statefulSets, pods, snapshots] = await Promise.all([
    list(client, { ...core, plural: 'persistentvolumeclaims' }, release, 'PersistentVolumeClaim', signal),
    list(client, { ...apps, plural: 'deployments' }, release, 'Deployment', signal),
    list(client, { ...apps, plural: 'statefulsets' }, release, 'StatefulSet', signal),
    list(client, { ...core, plural: 'pods' }, undefined, 'Pod', signal),
    o.withSnapshots
      ? list(
          client,
          { group: 'snapshot.storage.k8s.io', version: 'v1', plural: 'volumesnapshots', namespace },
          undefined,
          'VolumeSnapshot',
          signal,
        )
      : Promise.resolve(undefined),
  ]);
  return {
    pvcs,
    workloads: [...deployments, ...statefulSets],
    pods,
    ...(snapshots ? { snapshots } : {}),
  };
}

/**
 * A snapshot Verify, before its children exist: the release's claims (their class and access modes for the
 * copies) and the instance's snapshot Backups (label ops.vworkspace.io/instance); no workloads or pods, it
 * touches none. undefined on 403 (RbacProfilePresent reports the missing grant). RBAC: verify.snapshot.
 */
export async function readDrillFacts(
  client: KubeClient,
  namespace: string,
  o: { release: string; instance: string },
  signal: AbortSignal,
): Promise<RestoreFacts | undefined> {
  const core = { group: '', version: 'v1', namespace };
  const snapshots = { group: 'snapshot.storage.k8s.io', version: 'v1', plural: 'volumesnapshots', namespace };
  try {
    const [pvcs, snaps] = await Promise.all([
      list(
        client,
        { ...core, plural: 'persistentvolumeclaims' },
        `${LABEL_HELM_INSTANCE}=${o.release}`,
        'PersistentVolumeClaim',
        signal,
      ),
      list(client, snapshots, `${LABEL_INSTANCE}=${o.instance}`, 'VolumeSnapshot', signal),
    ]);
    return { pvcs, workloads: [], pods: [], snapshots: snaps };
  } catch (err) {
    if (statusCode(err) === 403) return undefined;
    throw err;
  }
}
