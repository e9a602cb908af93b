// The Helm chart of the install without OLM (hack/packaging/chart.ts), rendered by the real helm CLI: it
// makes from the CSV what OLM makes (the Deployment, the RBAC of each install mode, the webhooks on
// `<deployment>-service`), its generated CA signs the serving certificate the pods mount, and cert-manager
// can take the certificate over. Installed and run on the real node by test/e2e/real-node/chart.ts.
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { CSV_PATH, ROOT, readRepoFile } from './bundle.ts';
import { currentChartFiles, staleChartFiles } from './chart.ts';
import { CHART_DIR, chartFiles, WEBHOOK_SECRET, WEBHOOK_SERVICE } from './packaging/chart.ts';

interface Env {
  name: string;
  value?: string;
  valueFrom?: unknown;
}
interface Container {
  name: string;
  image: string;
  env: Env[];
  volumeMounts?: unknown[];
  [field: string]: unknown;
}
interface PodSpec {
  containers: Container[];
  securityContext?: unknown;
  volumes: { secret: { secretName: string } }[];
}
interface Webhook {
  name: string;
  clientConfig: {
    service: { name: string; namespace: string; path: string; port: number };
    caBundle?: string;
  };
  failurePolicy: string;
  rules: unknown;
  namespaceSelector: unknown;
}
/** What the tests read of the rendered objects (each kind's fields it has). */
interface Doc {
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  spec: {
    template: { spec: PodSpec };
    ports: unknown;
    secretName: string;
    issuerRef: unknown;
  };
  data: Record<string, string>;
  webhooks: Webhook[];
  rules: unknown;
  subjects: unknown;
}
interface Csv {
  metadata: { annotations: Record<string, string> };
  spec: {
    install: {
      spec: {
        deployments: { spec: { template: { spec: PodSpec } } }[];
        permissions: { rules: unknown }[];
        clusterPermissions: { rules: unknown }[];
      };
    };
    webhookdefinitions: {
      generateName: string;
      webhookPath: string;
      failurePolicy: string;
      rules: unknown;
    }[];
    relatedImages: { name: string; image: string }[];
  };
}

const HELM = join(ROOT, 'bin/helm');
const csv = YAML.parse(readFileSync(join(ROOT, CSV_PATH), 'utf8')) as Csv;

function helm(...args: string[]): string {
  if (!existsSync(HELM)) throw new Error(`${HELM} is missing: run hack/build-tools.sh helm (or make tools)`);
  const r = spawnSync(HELM, args, { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`helm ${args.join(' ')}:\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

function render(...set: string[]): Doc[] {
  const out = helm(
    'template',
    'vws',
    CHART_DIR,
    '--namespace',
    'vws-system',
    '--kube-version',
    '1.33.0',
    ...set.flatMap((s) => ['--set', s]),
  );
  return YAML.parseAllDocuments(out)
    .map((d) => d.toJS() as Doc | null)
    .filter((d): d is Doc => Boolean(d?.kind));
}

const one = (docs: Doc[], kind: string, name?: string): Doc => {
  const found = docs.filter((d) => d.kind === kind && (!name || d.metadata.name === name));
  expect(found, `${kind} ${name ?? ''}`).toHaveLength(1);
  return found[0]!;
};

describe('the Helm chart (install without OLM)', () => {
  it('is what the generator writes from the bundle, and helm lint --strict accepts it', () => {
    expect(staleChartFiles()).toEqual([]);
    expect(helm('lint', '--strict', '--kube-version', '1.33.0', CHART_DIR)).toMatch(
      /1 chart\(s\) linted, 0 chart\(s\) failed/,
    );
    // The CRDs are the bundle's, in crds/ (Helm installs them first and never deletes them).
    const crds = readdirSync(join(ROOT, CHART_DIR, 'crds')).sort();
    expect(crds).toEqual(
      readdirSync(join(ROOT, 'bundle/manifests'))
        .filter((f) => /\.vworkspace\.io_/.test(f))
        .sort(),
    );
    for (const f of crds)
      expect(readFileSync(join(ROOT, CHART_DIR, 'crds', f), 'utf8')).toBe(
        readFileSync(join(ROOT, 'bundle/manifests', f), 'utf8'),
      );
  });

  it('follows the bundle: another operator image in the CSV is another default image in values.yaml', () => {
    const other = `quay.io/x/op@sha256:${'a'.repeat(64)}`;
    const read = (p: string) =>
      p === CSV_PATH
        ? readRepoFile(p)?.replaceAll(csv.metadata.annotations.containerImage ?? '', other)
        : readRepoFile(p);
    const values = chartFiles(read, readdirSync(join(ROOT, 'bundle/manifests'))).find((f) =>
      f.path.endsWith('values.yaml'),
    )!;
    expect(YAML.parse(values.content).image).toMatchObject({
      repository: 'quay.io/x/op',
      digest: `sha256:${'a'.repeat(64)}`,
    });
    expect(currentChartFiles().find((f) => f.path.endsWith('values.yaml'))!.content).not.toContain(other);
  });

  it("runs the CSV's Deployment with the image, the watched namespaces and the certificate from the install", () => {
    const docs = render();
    const dep = one(docs, 'Deployment', 'vworkspace-operator');
    const want = csv.spec.install.spec.deployments[0]!.spec.template.spec.containers[0]!;
    const got = dep.spec.template.spec.containers[0]!;
    expect(got.image).toBe(want.image);
    for (const k of ['ports', 'livenessProbe', 'readinessProbe', 'securityContext', 'resources', 'name'])
      expect(got[k], k).toEqual(want[k]);
    expect(dep.spec.template.spec.securityContext).toEqual(
      csv.spec.install.spec.deployments[0]!.spec.template.spec.securityContext,
    );
    const env = Object.fromEntries(got.env.map((e) => [e.name, e.value ?? e.valueFrom]));
    expect(env).toMatchObject({
      WATCH_NAMESPACE: '',
      LEADER_ELECT: 'true',
      VELERO_NAMESPACE: 'velero',
      LOG_LEVEL: 'info',
    });
    expect(env.RELATED_IMAGE_HELM).toBe(csv.spec.relatedImages.find((r) => r.name === 'helm')?.image);
    expect(got.volumeMounts).toEqual([
      { name: 'webhook-cert', mountPath: '/tmp/k8s-webhook-server/serving-certs', readOnly: true },
    ]);
    expect(dep.spec.template.spec.volumes[0]?.secret.secretName).toBe(WEBHOOK_SECRET);
  });

  it('has a CA the webhooks trust that signed the Service certificate the pods mount', () => {
    const docs = render();
    const secret = one(docs, 'Secret', WEBHOOK_SECRET);
    const ca = new X509Certificate(Buffer.from(secret.data['ca.crt'] ?? '', 'base64'));
    const cert = new X509Certificate(Buffer.from(secret.data['tls.crt'] ?? '', 'base64'));
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.checkHost(`${WEBHOOK_SERVICE}.vws-system.svc`)).toBe(`${WEBHOOK_SERVICE}.vws-system.svc`);
    expect(cert.checkHost(`${WEBHOOK_SERVICE}.other.svc`)).toBeUndefined();
    const hooks = [
      one(docs, 'ValidatingWebhookConfiguration'),
      one(docs, 'MutatingWebhookConfiguration'),
    ].flatMap((c) => c.webhooks);
    // The same webhooks as the CSV's definitions, on OLM's Service name, with that CA.
    const byName = (a: unknown[], b: unknown[]) => String(a[0]).localeCompare(String(b[0]));
    expect(
      hooks.map((h) => [h.name, h.clientConfig.service.path, h.failurePolicy, h.rules]).sort(byName),
    ).toEqual(
      csv.spec.webhookdefinitions
        .map((d) => [d.generateName, d.webhookPath, d.failurePolicy, d.rules])
        .sort(byName),
    );
    for (const h of hooks) {
      expect(h.clientConfig.service).toMatchObject({
        name: WEBHOOK_SERVICE,
        namespace: 'vws-system',
        port: 443,
      });
      expect(h.clientConfig.caBundle).toBe(secret.data['ca.crt']);
      expect(h.namespaceSelector).toEqual({});
    }
    expect(one(docs, 'Service', WEBHOOK_SERVICE).spec.ports).toEqual([
      { name: 'webhook', port: 443, targetPort: 9443, protocol: 'TCP' },
    ]);
  });

  it("grants the CSV's permissions as OLM does: cluster-wide, or only in the watched namespaces", () => {
    const all = render();
    expect(one(all, 'ClusterRole', 'vworkspace-operator').rules).toEqual(
      csv.spec.install.spec.clusterPermissions[0]?.rules,
    );
    expect(one(all, 'ClusterRole', 'vworkspace-operator-watch').rules).toEqual(
      csv.spec.install.spec.permissions[0]?.rules,
    );
    expect(one(all, 'ClusterRoleBinding', 'vworkspace-operator-watch').subjects).toEqual([
      { kind: 'ServiceAccount', name: 'vworkspace-operator', namespace: 'vws-system' },
    ]);
    expect(all.filter((d) => d.kind === 'RoleBinding')).toEqual([]);
    // Every profile ClusterRole the bundle ships, and no other.
    const profiles = readdirSync(join(ROOT, 'bundle/manifests'))
      .filter((f) => f.startsWith('vworkspace-profile-') && f.includes('_clusterrole.'))
      .map((f) => f.slice(0, f.indexOf('_')))
      .sort();
    expect(profiles.length).toBeGreaterThan(0);
    expect(
      all
        .filter((d) => d.kind === 'ClusterRole' && d.metadata.name.startsWith('vworkspace-profile-'))
        .map((d) => d.metadata.name)
        .sort(),
    ).toEqual(profiles);

    const some = render('watchNamespaces={team-a,team-b}');
    expect(some.filter((d) => d.kind === 'ClusterRoleBinding').map((d) => d.metadata.name)).toEqual([
      'vworkspace-operator',
    ]);
    expect(
      some
        .filter((d) => d.kind === 'RoleBinding')
        .map((d) => d.metadata.namespace)
        .sort(),
    ).toEqual(['team-a', 'team-b', 'vws-system']);
    const env = one(some, 'Deployment').spec.template.spec.containers[0]?.env;
    expect(env?.find((e) => e.name === 'WATCH_NAMESPACE')?.value).toBe('team-a,team-b');
    for (const h of one(some, 'ValidatingWebhookConfiguration').webhooks)
      expect(h.namespaceSelector).toEqual({
        matchExpressions: [
          { key: 'kubernetes.io/metadata.name', operator: 'In', values: ['team-a', 'team-b', 'vws-system'] },
        ],
      });
  });

  it('leaves the certificate to cert-manager when asked: a Certificate, CA injection, no Secret of its own', () => {
    const docs = render('webhook.certManager.enabled=true');
    expect(docs.filter((d) => d.kind === 'Secret')).toEqual([]);
    expect(one(docs, 'Certificate', WEBHOOK_SECRET).spec).toMatchObject({
      secretName: WEBHOOK_SECRET,
      dnsNames: [`${WEBHOOK_SERVICE}.vws-system.svc`, `${WEBHOOK_SERVICE}.vws-system.svc.cluster.local`],
      issuerRef: { name: 'vworkspace-operator-selfsigned', kind: 'Issuer' },
    });
    const config = one(docs, 'ValidatingWebhookConfiguration');
    expect(config.metadata.annotations).toEqual({
      'cert-manager.io/inject-ca-from': `vws-system/${WEBHOOK_SECRET}`,
    });
    for (const h of config.webhooks) expect(h.clientConfig.caBundle).toBeUndefined();
    const own = render(
      'webhook.certManager.enabled=true',
      'webhook.certManager.issuerRef.name=corp-ca',
      'webhook.certManager.issuerRef.kind=ClusterIssuer',
    );
    expect(own.filter((d) => d.kind === 'Issuer')).toEqual([]);
    expect(one(own, 'Certificate').spec.issuerRef).toEqual({ name: 'corp-ca', kind: 'ClusterIssuer' });
  });

  it('keeps the alerts’ own templates for Prometheus, and ships monitoring only when asked', () => {
    expect(render().filter((d) => d.kind === 'PrometheusRule' || d.kind === 'ServiceMonitor')).toEqual([]);
    const rule = one(render('monitoring.prometheusRule=true'), 'PrometheusRule');
    expect(JSON.stringify(rule)).toContain('{{ $labels.namespace }}');
  });
});
