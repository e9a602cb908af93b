// The tests' own API clients. The operator's RestClient paces requests like client-go (20/s, burst 30);
// a test that polls or sets up objects is not the code under test, so its client is unthrottled — paced,
// the engine simulator's ten lists per pass stretched simulator.test.ts from 12 s to 60 s.
import { KubeConfig } from '@kubernetes/client-node';
import { RestClient } from '@vworkspace/runtime';

/** A RestClient for a test's own requests (and the in-process controllers tests start): unthrottled. */
export function testClient(kc: KubeConfig): RestClient {
  return new RestClient(kc, { qps: 0 });
}

/** A client acting as `user` (and `groups`) by impersonation with the admin's credentials: a tenant. */
export function impersonating(admin: KubeConfig, user: string, groups?: string[]): RestClient {
  const kc = new KubeConfig();
  const cluster = admin.getCurrentCluster();
  const me = admin.getCurrentUser();
  if (!cluster || !me) throw new Error('the admin kubeconfig has no current cluster or user');
  kc.loadFromOptions({
    clusters: [cluster],
    users: [
      { ...me, name: user, impersonateUser: user, ...(groups ? { impersonateUserGroups: groups } : {}) },
    ],
    contexts: [{ name: user, cluster: cluster.name, user }],
    currentContext: user,
  });
  return testClient(kc);
}
