// The bundle's other manifests and metadata, pure: the metrics Service, bundle/metadata/annotations.yaml
// and dependencies.yaml, the bundle image labels, and the ServiceMonitor we ship BESIDE the bundle
// (a ServiceMonitor inside a registry+v1 bundle fails the whole InstallPlan on clusters without the
// Prometheus Operator CRDs; see docs/adr/0004-olm-packaging.md).
import { PACKAGE_NAME, POD_LABELS, PORTS } from './csv.ts';
import { openshiftVersionsAnnotation } from './openshift.ts';

/** Channel names follow the good-practices rule (candidate/fast/stable prefix) and carry the major. */
export const CHANNELS = ['candidate-v0', 'stable-v0'] as const;
export const DEFAULT_CHANNEL = 'stable-v0';
export const METRICS_SERVICE = 'vworkspace-operator-metrics';

/** The OpenShift releases the bundle is offered on, derived from the CSV's minKubeVersion (openshift.ts). */
export const OPENSHIFT_VERSIONS_ANNOTATION = 'com.redhat.openshift.versions';

export function bundleAnnotations(minKubeVersion: string): Record<string, string> {
  return {
    'operators.operatorframework.io.bundle.mediatype.v1': 'registry+v1',
    'operators.operatorframework.io.bundle.manifests.v1': 'manifests/',
    'operators.operatorframework.io.bundle.metadata.v1': 'metadata/',
    'operators.operatorframework.io.bundle.package.v1': PACKAGE_NAME,
    'operators.operatorframework.io.bundle.channels.v1': CHANNELS.join(','),
    'operators.operatorframework.io.bundle.channel.default.v1': DEFAULT_CHANNEL,
    [OPENSHIFT_VERSIONS_ANNOTATION]: openshiftVersionsAnnotation(minKubeVersion),
  };
}

/** The engines' APIs: OLM resolves them to a bundle that provides each (Velero/OADP, Argo, VolSync). */
export function dependencies(): {
  type: 'olm.gvk';
  value: { group: string; version: string; kind: string };
}[] {
  return [
    { type: 'olm.gvk', value: { group: 'velero.io', version: 'v1', kind: 'Backup' } },
    { type: 'olm.gvk', value: { group: 'argoproj.io', version: 'v1alpha1', kind: 'Workflow' } },
    { type: 'olm.gvk', value: { group: 'volsync.backube', version: 'v1alpha1', kind: 'ReplicationSource' } },
  ];
}

export function metricsService(): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: METRICS_SERVICE, labels: { ...POD_LABELS, 'app.kubernetes.io/component': 'metrics' } },
    spec: {
      selector: { ...POD_LABELS },
      ports: [{ name: 'metrics', port: PORTS.metrics, targetPort: 'metrics', protocol: 'TCP' }],
    },
  };
}

/** The namespace label that lets a namespace's pods scrape /metrics through the NetworkPolicy. */
export const METRICS_SCRAPER_LABEL = 'ops.vworkspace.io/metrics-scraper';
export const NETWORK_POLICY = 'vworkspace-operator';
export const PDB = 'vworkspace-operator';

/**
 * Who may reach the operator's ports (docs/security/network.md). A NetworkPolicy cannot name the API
 * server: it is not a pod. Its calls come from node or control-plane addresses (ipBlock; on OpenShift the
 * host-network policy group), which is what the webhook and probe rules admit; pods are no ipBlock peers
 * on plugins that follow the API's guidance that ipBlock selects cluster-external addresses. /metrics is
 * open only to namespaces labelled as scrapers. Egress is left alone (the API server, DNS).
 */
export function networkPolicy(): Record<string, unknown> {
  const apiServer = [
    { ipBlock: { cidr: '0.0.0.0/0' } },
    { ipBlock: { cidr: '::/0' } },
    { namespaceSelector: { matchLabels: { 'policy-group.network.openshift.io/host-network': '' } } },
  ];
  const port = (p: number) => [{ protocol: 'TCP', port: p }];
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: NETWORK_POLICY, labels: { ...POD_LABELS } },
    spec: {
      podSelector: { matchLabels: { ...POD_LABELS } },
      policyTypes: ['Ingress'],
      ingress: [
        { ports: port(PORTS.webhook), from: apiServer },
        // The kubelet probes from the pod's own node, which NetworkPolicy never blocks; admitted anyway
        // for plugins that police node traffic. /healthz and /readyz reveal nothing.
        { ports: port(PORTS.probes), from: apiServer },
        {
          ports: port(PORTS.metrics),
          from: [
            { namespaceSelector: { matchLabels: { [METRICS_SCRAPER_LABEL]: 'true' } } },
            { namespaceSelector: { matchLabels: { 'network.openshift.io/policy-group': 'monitoring' } } },
          ],
        },
      ],
    },
  };
}

/** Two replicas serve the webhook (failurePolicy Fail): a voluntary disruption keeps one. */
export function podDisruptionBudget(): Record<string, unknown> {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: PDB, labels: { ...POD_LABELS } },
    spec: { minAvailable: 1, selector: { matchLabels: { ...POD_LABELS } } },
  };
}

/**
 * For clusters with the Prometheus Operator: `kubectl apply -n <operator-namespace> -f` it. honorLabels:
 * the operator's series carry the `namespace` of the object they describe (a CronOperation's, an
 * instance's), which must win over the scrape target's namespace (the operator's) instead of being renamed
 * exported_namespace, as for kube-state-metrics (docs/adr/0050-backup-metrics-and-alerts.md).
 */
export function serviceMonitor(): Record<string, unknown> {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { name: 'vworkspace-operator', labels: { ...POD_LABELS } },
    spec: {
      selector: { matchLabels: { ...POD_LABELS, 'app.kubernetes.io/component': 'metrics' } },
      endpoints: [{ port: 'metrics', path: '/metrics', interval: '30s', honorLabels: true }],
    },
  };
}

/** bundle.Dockerfile: FROM scratch, the labels equal to annotations.yaml, the two directories. */
export function bundleDockerfile(annotations: Record<string, string>): string {
  const labels = Object.entries(annotations)
    .map(([k, v]) => `LABEL ${k}=${v}`)
    .join('\n');
  return `# Code generated by hack/bundle.ts. DO NOT EDIT.
# The registry+v1 bundle image: no runtime, only the manifests and the metadata. The labels mirror
# bundle/metadata/annotations.yaml (OLM reads either).
FROM scratch

${labels}

COPY bundle/manifests /manifests/
COPY bundle/metadata /metadata/
`;
}
