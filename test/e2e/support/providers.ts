// Provider bundles for the APIs our bundle depends on (bundle/metadata/dependencies.yaml: olm.gvk
// velero.io/v1 Backup, argoproj.io/v1alpha1 Workflow, volsync.backube/v1alpha1 ReplicationSource). OLM
// counts an olm.gvk dependency as met only when a catalog bundle provides the API, so the e2e catalog
// carries one package per engine:
//
// - VolSync: the REAL upstream bundle (package `volsync`, its own CSV, CRDs, RBAC and metrics Service),
//   copied from the pinned Go module at build time (`hack/build-tools.sh volsync-bundle` → bin/). On kwok
//   its pods are faked, so its images (quay.io) are never pulled.
// - Velero and Argo Workflows: no Go module served here carries an OLM bundle for them (OADP's
//   github.com/openshift/oadp-operator is refused by the module proxy; Argo's module and Velero's have
//   none), so a small stand-in does, for dependency resolution only: it owns the REAL upstream CRDs of the
//   pinned module (bin/crds, hack/fetch-crds.sh) at the pinned version and installs a one-replica
//   Deployment whose kwok pod becomes Ready, so its CSV reaches Succeeded. Nothing runs in it.
//
// The real controllers run in the engine journeys on the real node (test/e2e/engines/), not here.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
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
  /** Files under bin/crds/ (a stand-in's CRDs). */
  crdFiles: readonly string[];
  /**
   * The upstream operator's own bundle directory under bin/ (manifests/, metadata/), copied from its Go
   * module at build time: served as it is instead of a stand-in; `package` must be its package name.
   */
  upstreamBundle?: string;
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
    package: 'volsync',
    displayName: 'VolSync',
    standsFor: 'VolSync operator',
    versionPin: 'VOLSYNC_VERSION',
    crdFiles: [],
    upstreamBundle: 'volsync-bundle',
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

/** The pod-level part of the restricted Pod Security Standard, as the nonroot user. */
const RESTRICTED_POD = {
  runAsNonRoot: true,
  runAsUser: 65532,
  runAsGroup: 65532,
  seccompProfile: { type: 'RuntimeDefault' },
};

/** An upstream bundle's directory; says how to get it when it is missing. */
export function upstreamBundleDir(p: Provider): string | undefined {
  if (!p.upstreamBundle) return undefined;
  const dir = join(BIN, p.upstreamBundle);
  if (!existsSync(join(dir, 'manifests')))
    throw new Error(`${dir} is missing: run \`hack/build-tools.sh ${p.upstreamBundle}\` (or make tools)`);
  return dir;
}

interface UpstreamCsv {
  metadata: { name: string };
  spec: {
    version: string;
    install: { spec: { deployments: { spec: { template: { spec: Record<string, unknown> } } }[] } };
  };
}

function manifests(dir: string): { file: string; doc: Record<string, unknown> }[] {
  return readdirSync(join(dir, 'manifests'))
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => ({
      file: join(dir, 'manifests', f),
      doc: parse(readFileSync(join(dir, 'manifests', f), 'utf8')),
    }));
}

function upstreamCsv(dir: string): UpstreamCsv {
  const csv = manifests(dir).find((m) => m.doc.kind === 'ClusterServiceVersion');
  if (!csv) throw new Error(`${dir}/manifests has no ClusterServiceVersion`);
  return csv.doc as unknown as UpstreamCsv;
}

/** The provider's CSV name: the upstream bundle's own, or `<package>.v<pin>` for a stand-in. */
export function providerCsvName(p: Provider): string {
  const dir = upstreamBundleDir(p);
  if (!dir) return `${p.package}.v${providerVersion(p)}`;
  const csv = upstreamCsv(dir);
  const annotations = parse(readFileSync(join(dir, 'metadata/annotations.yaml'), 'utf8')) as {
    annotations: Record<string, string>;
  };
  const pkg = annotations.annotations['operators.operatorframework.io.bundle.package.v1'];
  // A bin/ copy left from another pin, or a provider entry naming the wrong package, would resolve
  // differently from what the tests expect: say so instead.
  if (csv.spec.version !== providerVersion(p) || pkg !== p.package)
    throw new Error(
      `${dir} holds ${pkg} ${csv.spec.version}, not ${p.package} ${providerVersion(p)} (${p.versionPin}): run \`hack/build-tools.sh ${p.upstreamBundle}\``,
    );
  return csv.metadata.name;
}

interface Crd {
  metadata: { name: string };
  spec: {
    group: string;
    names: { kind: string; plural: string };
    versions: { name: string; storage?: boolean; served?: boolean }[];
  };
}

export function providerCrds(p: Provider): Crd[] {
  const dir = upstreamBundleDir(p);
  if (dir)
    return manifests(dir)
      .filter((m) => m.doc.kind === 'CustomResourceDefinition')
      .map((m) => m.doc as unknown as Crd);
  return p.crdFiles.map((f) => parse(readFileSync(join(BIN, 'crds', f), 'utf8')) as Crd);
}

/**
 * An upstream CSV whose Deployments run `container` instead of their images (the real node pulls only
 * from its own registry): every container gets the image and command, loses its args and probes (the
 * stand-in process serves none), and the pod runs restricted as the nonroot user (upstream pods demand
 * runAsNonRoot; busybox's image names no user). Pure.
 */
export function withContainer<T extends UpstreamCsv>(csv: T, container: ProviderContainer): T {
  const copy = structuredClone(csv);
  for (const d of copy.spec.install.spec.deployments) {
    const pod = d.spec.template.spec;
    pod.securityContext = { ...(pod.securityContext as object), ...RESTRICTED_POD };
    pod.containers = (pod.containers as Record<string, unknown>[]).map((c) => {
      const { args: _a, livenessProbe: _l, readinessProbe: _r, startupProbe: _s, ...rest } = c;
      return { ...rest, image: container.image, command: container.command };
    });
  }
  return copy;
}

/** The provider's CSV: owns its CRDs, AllNamespaces, one Deployment, read/write on its own kinds. */
/** What a provider's Deployment runs: nothing pullable on kwok; a real image on a real node. */
export interface ProviderContainer {
  image: string;
  command: string[];
}

export function providerCsv(p: Provider, container?: ProviderContainer): Record<string, unknown> {
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
                    // Restricted, as an operator's pod should be: the real node's operators namespace
                    // enforces it (busybox's image names no user, hence the uid).
                    securityContext: RESTRICTED_POD,
                    containers: [
                      {
                        name: 'manager',
                        // kwok plays the kubelet: nothing is ever pulled; a real node runs `container`.
                        image: container?.image ?? `registry.invalid/vworkspace-e2e/${p.package}:v${version}`,
                        ...(container ? { command: container.command } : {}),
                        resources: { requests: { cpu: '10m', memory: '16Mi' } },
                        securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
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
export function writeProviderBundle(p: Provider, dir: string, container?: ProviderContainer): void {
  mkdirSync(join(dir, 'manifests'), { recursive: true });
  mkdirSync(join(dir, 'metadata'), { recursive: true });
  const upstream = upstreamBundleDir(p);
  if (upstream) {
    for (const m of manifests(upstream)) {
      const out = join(dir, 'manifests', basename(m.file));
      if (container && m.doc.kind === 'ClusterServiceVersion')
        writeFileSync(out, toYaml(withContainer(m.doc as unknown as UpstreamCsv, container)));
      else copyFileSync(m.file, out);
    }
    for (const f of readdirSync(join(upstream, 'metadata')))
      copyFileSync(join(upstream, 'metadata', f), join(dir, 'metadata', f));
    return;
  }
  writeFileSync(
    join(dir, 'manifests', `${p.package}.clusterserviceversion.yaml`),
    toYaml(providerCsv(p, container)),
  );
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
