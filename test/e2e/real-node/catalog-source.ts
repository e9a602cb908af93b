// The CatalogSource of the journeys on a real node: OLM runs the catalog image as a real pod (restricted
// pod security) and connects to it by its Service's name.

import { PATCH_TYPES } from '@vworkspace/runtime';
import { catalogSourcePath, OLM_NAMESPACE } from '../../../hack/lib/olm.ts';
import type { RealNode } from '../../../hack/lib/real-node.ts';
import { eventually } from '../../support/eventually.ts';
import { PACKAGE_NAME } from '../support/install.ts';
import { subscribe } from '../support/olm-api.ts';
import { CATALOG_SOURCE } from '../support/world.ts';

interface CatalogPod {
  metadata?: { name?: string; deletionTimestamp?: string };
  spec: { containers: { image: string }[] };
  status?: { phase?: string; containerStatuses?: { ready?: boolean }[] };
}

/** Points the CatalogSource at `image` (created on first use). */
export function pointCatalog(node: RealNode, image: string): Promise<unknown> {
  return node.client.request({
    method: 'PATCH',
    path: catalogSourcePath(OLM_NAMESPACE, CATALOG_SOURCE),
    query: { fieldManager: 'vworkspace-e2e', force: true },
    contentType: PATCH_TYPES.apply,
    body: {
      apiVersion: 'operators.coreos.com/v1alpha1',
      kind: 'CatalogSource',
      metadata: { name: CATALOG_SOURCE, namespace: OLM_NAMESPACE },
      spec: {
        sourceType: 'grpc',
        image,
        displayName: 'vworkspace real node',
        publisher: 'vworkspace e2e',
        grpcPodConfig: { securityContextConfig: 'restricted' },
      },
    },
  });
}

/** Waits for a ready CatalogSource pod running `image`; returns it. */
export function catalogPodRunning(node: RealNode, image: string): Promise<CatalogPod> {
  return eventually(
    `a Running CatalogSource pod from ${image}`,
    async () =>
      (
        await node.client.request<{ items: CatalogPod[] }>({
          method: 'GET',
          path: `/api/v1/namespaces/${OLM_NAMESPACE}/pods`,
          query: { labelSelector: `olm.catalogSource=${CATALOG_SOURCE}` },
        })
      ).items.find(
        (p) =>
          p.status?.phase === 'Running' &&
          p.status.containerStatuses?.every((c) => c.ready) &&
          p.spec.containers[0]?.image === image &&
          !p.metadata?.deletionTimestamp,
      ),
    300_000,
    1000,
  );
}

/** Waits until OLM reports its connection to the CatalogSource READY. */
export function catalogReady(node: RealNode): Promise<boolean> {
  return eventually(
    'CatalogSource READY',
    async () => {
      const cs = await node.client.request<{ status?: { connectionState?: { lastObservedState?: string } } }>(
        {
          method: 'GET',
          path: catalogSourcePath(OLM_NAMESPACE, CATALOG_SOURCE),
        },
      );
      return cs.status?.connectionState?.lastObservedState === 'READY';
    },
    300_000,
    1000,
  );
}

/** The Subscription a user makes: our package, channel stable-v0, from this CatalogSource, automatic. */
export function subscribeOperator(node: RealNode): Promise<void> {
  return subscribe(node.client, PACKAGE_NAME, {
    name: PACKAGE_NAME,
    channel: 'stable-v0',
    source: CATALOG_SOURCE,
    sourceNamespace: OLM_NAMESPACE,
    installPlanApproval: 'Automatic',
  });
}
