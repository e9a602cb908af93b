// The ClusterServiceVersion, as a pure function of the packaging sources (packaging/) and the project's
// own tables: owned kinds (operator/src/api), webhook paths (operator/src/admission/handlers.ts) and the
// operator's permissions (operator/src/rbac/operator.ts). Nothing here reads files or the clock, so the
// same inputs always give the same bytes (the staleness check depends on it).
import { ALL_KINDS, APPS_GROUP, OPS_GROUP, VERSION_V1ALPHA1 } from '@vworkspace/operator/api';
import {
  MUTATING_OPERATION_WEBHOOK,
  MUTATING_SCHEDULE_WEBHOOK,
  OPERATOR_CLUSTER_RULES,
  OPERATOR_NAMESPACE_RULES,
  type PolicyRule,
  WEBHOOK_PATHS,
} from '@vworkspace/operator/packaging';
import type { Edges } from './template.ts';

export const PACKAGE_NAME = 'vworkspace-operator';
/** Deployment and ServiceAccount name; OLM names the webhook Service `<deployment>-service`. */
export const DEPLOYMENT_NAME = 'vworkspace-operator';
export const SERVICE_ACCOUNT = 'vworkspace-operator';
export const CONTAINER_NAME = 'manager';
export const POD_LABELS = { 'app.kubernetes.io/name': 'vworkspace-operator' } as const;
export const PORTS = { metrics: 8080, probes: 8081, webhook: 9443 } as const;
/**
 * The platforms the operator image is built for (hack/images: linux/amd64 only). They appear three
 * times, which operator-sdk's multiarch validator compares with the images' own platform lists: the
 * CSV's `operatorframework.io/arch.*`/`os.*` labels (what OperatorHub filters on), the Deployment's
 * required node affinity (a Pod never lands on a node its image cannot run on), and each image index.
 */
export const PLATFORMS = [{ os: 'linux', architecture: 'amd64' }] as const;
/** OLM writes the OperatorGroup's target namespaces here (comma-separated; empty = all namespaces). */
export const TARGET_NAMESPACES_ANNOTATION = 'olm.targetNamespaces';

export interface Images {
  /** The operator image, by digest. */
  operator: string;
  /** The helm CLI runner image (RELATED_IMAGE_HELM), by digest. */
  helm: string;
}

export interface CsvInputs {
  version: string;
  /** This version's upgrade edges from the catalog's channels (template.ts edgesFor). */
  edges?: Edges;
  /** RFC 3339, from the version's source date. */
  createdAt: string;
  images: Images;
  /** packaging/csv.base.yaml, parsed. */
  base: Record<string, unknown>;
  /** packaging/description.md */
  description: string;
  /** packaging/icon.svg */
  iconSvg: string;
  /** packaging/examples.yaml, parsed: one object per owned kind. */
  examples: readonly Record<string, unknown>[];
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function field(o: Obj, key: string): Obj {
  const v = o[key];
  if (!isObj(v)) throw new Error(`packaging/csv.base.yaml: ${key} must be a mapping`);
  return v;
}

export function csvName(version: string): string {
  return `${PACKAGE_NAME}.v${version}`;
}

/** The RBAC rule as a CSV/Role rule: the `why` stays in the source and the docs. */
export function toRbacRule(r: PolicyRule): { apiGroups: string[]; resources: string[]; verbs: string[] } {
  return { apiGroups: [...r.apiGroups], resources: [...r.resources], verbs: [...r.verbs] };
}

/** Environment variables that name images; each needs a relatedImages entry with the same image. */
export function relatedImageEnv(images: Images): { name: string; value: string }[] {
  return [{ name: 'RELATED_IMAGE_HELM', value: images.helm }];
}

export function relatedImages(images: Images): { name: string; image: string }[] {
  return [
    { name: 'vworkspace-operator', image: images.operator },
    { name: 'helm', image: images.helm },
  ];
}

export function deployment(images: Images): Obj {
  return {
    name: DEPLOYMENT_NAME,
    label: { ...POD_LABELS },
    spec: {
      // Two replicas: the webhook (failurePolicy Fail) is served by every replica, the reconcilers by
      // the Lease holder only, so a single pod restart never blocks Operation admission.
      replicas: 2,
      selector: { matchLabels: { ...POD_LABELS } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 1 } },
      template: {
        metadata: {
          labels: { ...POD_LABELS },
          annotations: { 'kubectl.kubernetes.io/default-container': CONTAINER_NAME },
        },
        spec: {
          serviceAccountName: SERVICE_ACCOUNT,
          // The operator talks to the API server with its own identity.
          automountServiceAccountToken: true,
          // No runAsUser: the image's USER is numeric (65532) and OpenShift's restricted SCC assigns UIDs.
          securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          terminationGracePeriodSeconds: 30,
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [
                  {
                    matchExpressions: [
                      {
                        key: 'kubernetes.io/arch',
                        operator: 'In',
                        values: PLATFORMS.map((p) => p.architecture),
                      },
                      {
                        key: 'kubernetes.io/os',
                        operator: 'In',
                        values: [...new Set(PLATFORMS.map((p) => p.os))],
                      },
                    ],
                  },
                ],
              },
            },
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                {
                  weight: 100,
                  podAffinityTerm: {
                    topologyKey: 'kubernetes.io/hostname',
                    labelSelector: { matchLabels: { ...POD_LABELS } },
                  },
                },
              ],
            },
          },
          containers: [
            {
              name: CONTAINER_NAME,
              image: images.operator,
              imagePullPolicy: 'IfNotPresent',
              env: [
                { name: 'OPERATOR_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                // The install mode: OLM copies the OperatorGroup's targets onto the Pod template.
                {
                  name: 'WATCH_NAMESPACE',
                  valueFrom: {
                    fieldRef: { fieldPath: `metadata.annotations['${TARGET_NAMESPACES_ANNOTATION}']` },
                  },
                },
                { name: 'LEADER_ELECT', value: 'true' },
                ...relatedImageEnv(images),
              ],
              ports: [
                { name: 'metrics', containerPort: PORTS.metrics, protocol: 'TCP' },
                { name: 'probes', containerPort: PORTS.probes, protocol: 'TCP' },
                { name: 'webhook-server', containerPort: PORTS.webhook, protocol: 'TCP' },
              ],
              livenessProbe: {
                httpGet: { path: '/healthz', port: PORTS.probes },
                initialDelaySeconds: 15,
                periodSeconds: 20,
              },
              readinessProbe: {
                httpGet: { path: '/readyz', port: PORTS.probes },
                initialDelaySeconds: 5,
                periodSeconds: 10,
              },
              resources: {
                requests: { cpu: '100m', memory: '128Mi' },
                limits: { cpu: '500m', memory: '512Mi' },
              },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                runAsNonRoot: true,
                capabilities: { drop: ['ALL'] },
              },
            },
          ],
        },
      },
    },
  };
}

/** `operatorframework.io/arch.<arch>: supported` and `os.<os>` for every platform (OperatorHub's filters). */
export function platformLabels(): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const p of PLATFORMS) {
    labels[`operatorframework.io/arch.${p.architecture}`] = 'supported';
    labels[`operatorframework.io/os.${p.os}`] = 'supported';
  }
  return labels;
}

/** One webhook definition per handler; names match the integration tests' configurations. */
export function webhookDefinitions(): Obj[] {
  const common = {
    admissionReviewVersions: ['v1'],
    containerPort: PORTS.webhook,
    targetPort: PORTS.webhook,
    deploymentName: DEPLOYMENT_NAME,
    failurePolicy: 'Fail',
    sideEffects: 'None',
    timeoutSeconds: 10,
  };
  const rule = (resource: string, group: string = OPS_GROUP) => [
    {
      apiGroups: [group],
      apiVersions: [VERSION_V1ALPHA1],
      operations: ['CREATE', 'UPDATE'],
      resources: [resource],
    },
  ];
  return [
    {
      ...common,
      type: 'MutatingAdmissionWebhook',
      generateName: MUTATING_OPERATION_WEBHOOK,
      webhookPath: WEBHOOK_PATHS.mutateOperation,
      rules: rule('operations'),
    },
    {
      ...common,
      type: 'MutatingAdmissionWebhook',
      generateName: MUTATING_SCHEDULE_WEBHOOK,
      webhookPath: WEBHOOK_PATHS.mutateSchedule,
      rules: [...rule('cronoperations'), ...rule('watchoperations')],
    },
    {
      ...common,
      type: 'ValidatingAdmissionWebhook',
      generateName: `voperation.${OPS_GROUP}`,
      webhookPath: WEBHOOK_PATHS.validateOperation,
      rules: rule('operations'),
    },
    {
      ...common,
      type: 'ValidatingAdmissionWebhook',
      generateName: `vcronoperation.${OPS_GROUP}`,
      webhookPath: WEBHOOK_PATHS.validateCronOperation,
      rules: rule('cronoperations'),
    },
    {
      ...common,
      type: 'ValidatingAdmissionWebhook',
      generateName: `vwatchoperation.${OPS_GROUP}`,
      webhookPath: WEBHOOK_PATHS.validateWatchOperation,
      rules: rule('watchoperations'),
    },
    {
      ...common,
      // Ignore: the instance controller enforces the same rule (ReleaseNamespaceForbidden), so instances
      // never wait for the operator; the webhook only makes the refusal early and readable.
      failurePolicy: 'Ignore',
      type: 'ValidatingAdmissionWebhook',
      generateName: `vapplicationinstance.${APPS_GROUP}`,
      webhookPath: WEBHOOK_PATHS.validateApplicationInstance,
      rules: rule('applicationinstances', APPS_GROUP),
    },
  ];
}

/** Owned CRDs: the hand-written UI text from the base, names and versions from the API tables. */
function ownedCrds(base: Obj): Obj[] {
  const crds = field(base, 'spec').customresourcedefinitions;
  const owned = isObj(crds) && Array.isArray(crds.owned) ? crds.owned : [];
  return ALL_KINDS.map((k) => {
    const ui = owned.find((o): o is Obj => isObj(o) && o.kind === k.resource.kind);
    if (!ui) throw new Error(`packaging/csv.base.yaml: no owned CRD entry for kind ${k.resource.kind}`);
    return {
      name: `${k.resource.plural}.${k.resource.group}`,
      version: k.resource.version,
      ...ui,
      kind: k.resource.kind,
    };
  });
}

export function buildCsv(inp: CsvInputs): Obj {
  const baseMeta = field(inp.base, 'metadata');
  const baseSpec = field(inp.base, 'spec');
  return {
    apiVersion: 'operators.coreos.com/v1alpha1',
    kind: 'ClusterServiceVersion',
    metadata: {
      name: csvName(inp.version),
      labels: platformLabels(),
      annotations: {
        ...field(baseMeta, 'annotations'),
        'alm-examples': `${JSON.stringify(inp.examples, null, 2)}\n`,
        containerImage: inp.images.operator,
        createdAt: inp.createdAt,
        ...(inp.edges?.skipRange ? { 'olm.skipRange': inp.edges.skipRange } : {}),
        'operators.operatorframework.io/builder': 'hack/bundle.ts',
      },
    },
    spec: {
      ...baseSpec,
      version: inp.version,
      ...(inp.edges?.replaces ? { replaces: inp.edges.replaces } : {}),
      ...(inp.edges?.skips ? { skips: inp.edges.skips } : {}),
      description: inp.description,
      icon: [{ base64data: Buffer.from(inp.iconSvg).toString('base64'), mediatype: 'image/svg+xml' }],
      customresourcedefinitions: { owned: ownedCrds(inp.base) },
      install: {
        strategy: 'deployment',
        spec: {
          deployments: [deployment(inp.images)],
          permissions: [
            { serviceAccountName: SERVICE_ACCOUNT, rules: OPERATOR_NAMESPACE_RULES.map(toRbacRule) },
          ],
          clusterPermissions: [
            { serviceAccountName: SERVICE_ACCOUNT, rules: OPERATOR_CLUSTER_RULES.map(toRbacRule) },
          ],
        },
      },
      webhookdefinitions: webhookDefinitions(),
      relatedImages: relatedImages(inp.images),
    },
  };
}
