// The bench takes the operator's leader-election Lease for a while, as another replica would: the running
// operator loses it (its controllers stop, its webhooks keep serving: ADR 0010) until the bench gives it
// back. The operations scenario uses it to time the API work of Operations nobody reconciles.
import {
  DEFAULT_LEASE_NAME,
  formatMicroTime,
  isConflict,
  type LeaseObject as Lease,
  type RestClient,
} from '@vworkspace/runtime';
import { OPERATOR_NAMESPACE } from './world.ts';

const LEASE_PATH = `/apis/coordination.k8s.io/v1/namespaces/${OPERATOR_NAMESPACE}/leases/${DEFAULT_LEASE_NAME}`;

/** Compare-and-swap of the Lease's spec, retried on conflicts (the operator renews it every 2 s). */
async function swap(api: RestClient, spec: (old: Lease['spec']) => Lease['spec']): Promise<void> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const lease = await api.request<Lease>({ method: 'GET', path: LEASE_PATH });
    try {
      await api.request({ method: 'PUT', path: LEASE_PATH, body: { ...lease, spec: spec(lease.spec) } });
      return;
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
  }
  throw new Error('bench: the Lease kept changing under 20 compare-and-swaps');
}

/** Takes the Lease as `holder` for an hour (the operator sees a valid lease of someone else's). */
export function holdLease(api: RestClient, holder: string): Promise<void> {
  const now = formatMicroTime(Date.now());
  return swap(api, (old) => ({
    holderIdentity: holder,
    leaseDurationSeconds: 3600,
    acquireTime: now,
    renewTime: now,
    leaseTransitions: (old?.leaseTransitions ?? 0) + 1,
  }));
}

/** Gives the Lease back as client-go's release does: holder cleared, duration 1 s. */
export function releaseLease(api: RestClient): Promise<void> {
  return swap(api, (old) => ({ ...old, holderIdentity: '', leaseDurationSeconds: 1 }));
}
