// Vitest global setup for test/integration: one real etcd + kube-apiserver for the whole run,
// with the project's and the upstream CRDs installed. Tests read the admin kubeconfig path with
// `inject('kubeconfig')`. Teardown always runs; if this process dies instead, the reaper that
// wraps each server (hack/lib/reaper.sh) stops it.
import type { TestProject } from 'vitest/node';
import { startControlPlane } from '../../hack/lib/controlplane.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // OwnerReferencesPermissionEnforcement (on in OpenShift): an ownerReference with blockOwnerDeletion needs
  // update on the owner's finalizers, so the operator's own RBAC (the security world runs it on exactly
  // the CSV's) is checked for the children it creates, and a tenant cannot forge such a reference.
  const cp = await startControlPlane({
    apiServerArgs: ['--enable-admission-plugins=OwnerReferencesPermissionEnforcement'],
  });
  project.provide('kubeconfig', cp.kubeconfigPath);
  return async () => {
    await cp.stop();
  };
}
