// The way out for clusters whose engines came from Helm charts or manifests (docs/adr/0031-engine-dependencies.md,
// docs/install.md "Engines installed without OLM"). OLM counts an olm.gvk dependency as met only by an
// operator it knows in the Subscription's namespace or by a catalog bundle it would install there; CRDs
// installed by Helm count for nothing, and the Subscription stays at "constraints not satisfiable".
//
// This ClusterServiceVersion, applied by the admin in the operator's namespace before subscribing, is such
// an operator: it installs nothing (no deployment, no permissions, no CRDs), declares the engines' APIs as
// its properties (what OLM's resolver reads from an installed CSV) and lists them as `nativeAPIs` (what
// OLM checks on the cluster), so its status says whether they really exist: Succeeded when every API is
// served, Pending with "Native API does not exist" naming the missing one otherwise. The GVKs are the
// bundle's own dependencies (manifests.ts dependencies()), so the two never drift.
import { dependencies } from './manifests.ts';

export const ENGINE_APIS_PACKAGE = 'vworkspace-engine-apis';
export const ENGINE_APIS_PATH = 'packaging/olm/engine-apis.yaml';
/** The annotation OLM's resolver reads an installed CSV's properties from (operator-registry's projection). */
export const PROPERTIES_ANNOTATION = 'operatorframework.io/properties';

export function engineApisCsvName(version: string): string {
  return `${ENGINE_APIS_PACKAGE}.v${version}`;
}

export function engineApisCsv(version: string, minKubeVersion: string): Record<string, unknown> {
  const gvks = dependencies().map((d) => d.value);
  const properties = [
    { type: 'olm.package', value: { packageName: ENGINE_APIS_PACKAGE, version } },
    ...gvks.map((g) => ({ type: 'olm.gvk', value: { group: g.group, kind: g.kind, version: g.version } })),
  ];
  return {
    apiVersion: 'operators.coreos.com/v1alpha1',
    kind: 'ClusterServiceVersion',
    metadata: {
      name: engineApisCsvName(version),
      annotations: {
        [PROPERTIES_ANNOTATION]: JSON.stringify({ properties }),
        description:
          'The engine APIs vworkspace-operator depends on, installed outside OLM (Helm, manifests).',
      },
    },
    spec: {
      displayName: 'vworkspace engine APIs (installed without OLM)',
      description: `Tells OLM that the engines' APIs the vworkspace-operator bundle depends on (${gvks
        .map((g) => `${g.group}/${g.version} ${g.kind}`)
        .join(
          ', ',
        )}) are on this cluster, installed by other means than OLM, so that OLM resolves the operator without installing a provider. It installs nothing. It reaches Succeeded only when every one of those APIs is served; otherwise its requirement status names the missing API.\n`,
      version,
      minKubeVersion,
      maturity: 'alpha',
      provider: { name: 'vworkspace' },
      installModes: ['OwnNamespace', 'SingleNamespace', 'MultiNamespace', 'AllNamespaces'].map((type) => ({
        type,
        supported: true,
      })),
      install: { strategy: 'deployment', spec: { deployments: [] } },
      nativeAPIs: gvks,
    },
  };
}
