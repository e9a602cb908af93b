// Test-only provider bundles for the APIs our bundle depends on (bundle/metadata/dependencies.yaml:
// olm.gvk velero.io/v1 Backup, argoproj.io/v1alpha1 Workflow, volsync.backube/v1alpha1
// ReplicationSource). OLM counts an olm.gvk dependency as met only when a catalog bundle provides the
// API, so the e2e catalog carries one small package per engine, standing in for the OperatorHub
// operators that provide them on a real cluster (OADP for Velero, Argo Workflows, VolSync). Each owns
// the REAL upstream CRDs of the pinned module (bin/crds, hack/fetch-crds.sh) at the pinned version,
// and installs a one-replica Deployment whose kwok pod becomes Ready, so its CSV reaches Succeeded.
// Nothing runs in it: the engine simulator (test/support/simulator.ts) plays the controllers.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parse } from 'yaml';
import { toYaml } from '../../../hack/bundle.ts';
import { BIN, ROOT } from '../../../hack/lib/controlplane.ts';

export interface Provider {
  /** OLM package name. */
  package: string;
  displayName: string;
  /** What provides these APIs on a real cluster. */
  standsFor: string;
  /** hack/versions.env variable whose pin is both the CRDs' module version and this bundle's version. */
  versionPin: string;
  /** Files under bin/crds/. */
  crdFiles: readonly string[];
}

export const PROVIDERS: readonly Provider[] = [
  {
    package: 'e2e-velero',
    displayName: 'Velero (e2e provider)',
    standsFor: 'OADP Operator (Velero)',
    versionPin: 'VELERO_VERSION',
    crdFiles: [
      'velero.io_backups.yaml',
      'velero.io_restores.yaml',
      'velero.io_backupstoragelocations.yaml',
      'velero.io_deletebackuprequests.yaml',
    ],
  },
  {
    package: 'e2e-argo-workflows',
    displayName: 'Argo Workflows (e2e provider)',
    standsFor: 'Argo Workflows community operator',
    versionPin: 'ARGO_WORKFLOWS_VERSION',
    // Argo's minimal CRDs, the ones its install manifests ship (hack/fetch-crds.sh): OLM inlines an
    // image-less bundle's manifests into the InstallPlan, and with the full CRDs (1.6 MB) the plan
    // exceeds the 2 MiB the API server may write to etcd.
    crdFiles: ['argo-minimal/argoproj.io_workflows.yaml', 'argo-minimal/argoproj.io_workflowtemplates.yaml'],
  },
  {
    package: 'e2e-volsync',
    displayName: 'VolSync (e2e provider)',
    standsFor: 'VolSync operator',
    versionPin: 'VOLSYNC_VERSION',
    crdFiles: ['volsync.backube_replicationsources.yaml', 'volsync.backube_replicationdestinations.yaml'],
  },
];

export const PROVIDER_CHANNEL = 'stable';

/** The pin of hack/versions.env without its `v`: the provider bundle's version. */
export function providerVersion(p: Provider): string {
  const env = readFileSync(join(ROOT, 'hack/versions.env'), 'utf8');
  const m = new RegExp(`^${p.versionPin}=v?(\\S+)$`, 'm').exec(env);
  if (!m?.[1]) throw new Error(`hack/versions.env has no ${p.versionPin}`);
  return m[1];
}

export const providerCsvName = (p: Provider) => `${p.package}.v${providerVersion(p)}`;

interface Crd {
  metadata: { name: string };
  spec: {
    group: string;
    names: { kind: string; plural: string };
    versions: { name: string; storage?: boolean; served?: boolean }[];
  };
}

export function providerCrds(p: Provider): Crd[] {
  return p.crdFiles.map((f) => parse(readFileSync(join(BIN, 'crds', f), 'utf8')) as Crd);
}

/** The provider's CSV: owns its CRDs, AllNamespaces, one Deployment, read/write on its own kinds. */
export function providerCsv(p: Provider): Record<string, unknown> {
  const crds = providerCrds(p);
  const version = providerVersion(p);
  const labels = { 'app.kubernetes.io/name': p.package };
  const groups = [...new Set(crds.map((c) => c.spec.group))];
  return {
    apiVersion: 'operators.coreos.com/v1alpha1',
    kind: 'ClusterServiceVersion',
    metadata: {
      name: providerCsvName(p),
      annotations: { capabilities: 'Basic Install', categories: 'Storage' },
    },
    spec: {
      displayName: p.displayName,
      description: `Test-only stand-in for the ${p.standsFor}: owns its real CRDs so OLM resolves olm.gvk dependencies on them. Runs no controller.`,
      version,
      maturity: 'alpha',
      provider: { name: 'vworkspace e2e' },
      minKubeVersion: '1.30.0',
      installModes: [
        // OwnNamespace too, as OADP and VolSync support it: the own-namespace journey installs them
        // beside our operator in its namespace.
        { type: 'OwnNamespace', supported: true },
        { type: 'SingleNamespace', supported: false },
        { type: 'MultiNamespace', supported: false },
        { type: 'AllNamespaces', supported: true },
      ],
      customresourcedefinitions: {
        owned: crds.map((c) => ({
          name: c.metadata.name,
          version: c.spec.versions.find((v) => v.storage)?.name ?? c.spec.versions[0]?.name,
          kind: c.spec.names.kind,
          displayName: c.spec.names.kind,
          description: `${c.spec.names.kind} (${c.spec.group}), the upstream CRD.`,
        })),
      },
      install: {
        strategy: 'deployment',
        spec: {
          clusterPermissions: [
            {
              serviceAccountName: p.package,
              rules: groups.map((g) => ({
                apiGroups: [g],
                resources: crds.filter((c) => c.spec.group === g).map((c) => c.spec.names.plural),
                verbs: ['get', 'list', 'watch', 'update', 'patch'],
              })),
            },
          ],
          deployments: [
            {
              name: `${p.package}-controller`,
              label: labels,
              spec: {
                replicas: 1,
                selector: { matchLabels: labels },
                template: {
                  metadata: { labels },
                  spec: {
                    serviceAccountName: p.package,
                    containers: [
                      {
                        name: 'manager',
                        // kwok plays the kubelet: nothing is ever pulled.
                        image: `registry.invalid/vworkspace-e2e/${p.package}:v${version}`,
                        resources: { requests: { cpu: '10m', memory: '16Mi' } },
                      },
                    ],
                  },
                },
              },
            },
          ],
        },
      },
    },
  };
}

/** Writes a registry+v1 bundle directory (manifests/, metadata/) for `opm render`. */
export function writeProviderBundle(p: Provider, dir: string): void {
  mkdirSync(join(dir, 'manifests'), { recursive: true });
  mkdirSync(join(dir, 'metadata'), { recursive: true });
  writeFileSync(join(dir, 'manifests', `${p.package}.clusterserviceversion.yaml`), toYaml(providerCsv(p)));
  for (const f of p.crdFiles) copyFileSync(join(BIN, 'crds', f), join(dir, 'manifests', basename(f)));
  writeFileSync(
    join(dir, 'metadata/annotations.yaml'),
    toYaml({
      annotations: {
        'operators.operatorframework.io.bundle.mediatype.v1': 'registry+v1',
        'operators.operatorframework.io.bundle.manifests.v1': 'manifests/',
        'operators.operatorframework.io.bundle.metadata.v1': 'metadata/',
        'operators.operatorframework.io.bundle.package.v1': p.package,
        'operators.operatorframework.io.bundle.channels.v1': PROVIDER_CHANNEL,
        'operators.operatorframework.io.bundle.channel.default.v1': PROVIDER_CHANNEL,
      },
    }),
  );
}
