// The OLM bundle: generated files are fresh, the CSV is consistent with the bundle's CRDs, webhooks,
// images and RBAC tables, and operator-sdk's validators (operatorframework suite) report nothing at all.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { operatorNodeArgs } from '@vworkspace/operator';
import {
  OPERATOR_CLUSTER_RULES,
  OPERATOR_NAMESPACE_RULES,
  profileClusterRole,
  RBAC_PROFILE_LIST,
} from '@vworkspace/operator/packaging';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import {
  bundleFiles,
  CSV_PATH,
  createdAtFor,
  NETWORK_POLICY_PATH,
  ROOT,
  readRepoFile,
  resolveOptions,
  staleFiles,
  writeBundleDir,
} from './bundle.ts';
import { writeCatalog } from './catalog.ts';
import { generatedFiles } from './generate.ts';
import {
  almExampleProblems,
  bundleSizeProblems,
  clusterWriteProblems,
  containers,
  deployments,
  descriptorProblems,
  ownedCrdProblems,
  type Rule,
  rbacProblems,
  relatedImageProblems,
  webhookProblems,
} from './packaging/checks.ts';
import { PACKAGE_NAME } from './packaging/csv.ts';
import { bundleName } from './packaging/fbc.ts';
import { bundleAnnotations, METRICS_SCRAPER_LABEL } from './packaging/manifests.ts';
import { runTool, sdkFindings } from './packaging/tools.ts';

type Obj = Record<string, unknown>;

const opts = resolveOptions({});
const manifestNames = readdirSync(join(ROOT, 'bundle/manifests'));
const manifests = manifestNames.map((n) => YAML.parse(readRepoFile(`bundle/manifests/${n}`)!) as Obj);
const crds = manifests.filter((m) => m.kind === 'CustomResourceDefinition');

/** A fresh copy of the generated CSV, to break in one place per test. */
function csv(): Obj {
  const text = bundleFiles(opts).find((f) => f.path === CSV_PATH)!.content;
  return YAML.parse(text) as Obj;
}
const spec = (c: Obj) => c.spec as Obj & { install: { spec: Obj & { deployments: Obj[] } } };

describe('generated bundle files', () => {
  it('are committed up to date (run `npm run bundle` when this fails)', () => {
    expect(staleFiles(opts)).toEqual([]);
  });

  it('names a hand-edited or missing file', () => {
    const edited = (p: string) => (p === CSV_PATH ? `${readRepoFile(p)}# edit\n` : readRepoFile(p));
    expect(staleFiles(opts, edited)).toEqual([CSV_PATH]);
    const gone = (p: string) => (p === 'bundle/metadata/annotations.yaml' ? undefined : readRepoFile(p));
    expect(staleFiles(opts, gone)).toEqual(['bundle/metadata/annotations.yaml']);
  });

  it('are reproducible: createdAt comes from the version, not the clock', () => {
    expect(bundleFiles(opts)).toEqual(bundleFiles(opts));
    expect(opts.createdAt).toBe('2026-11-22T00:00:00Z');
    expect(createdAtFor('1.0.0', '"1.0.0": "2027-01-02T03:04:05Z"\n')).toBe('2027-01-02T03:04:05Z');
    expect(createdAtFor('1.0.0', '', '1700000000')).toBe('2023-11-14T22:13:20Z');
    expect(() => createdAtFor('9.9.9', '"1.0.0": "2027-01-02T00:00:00Z"\n')).toThrow(/no date for 9.9.9/);
  });

  it('take the version and the operator image from the environment, by digest only', () => {
    const img = `quay.io/x/op@sha256:${'a'.repeat(64)}`;
    const o = resolveOptions({ VERSION: '0.0.9', IMG: img });
    expect(o).toMatchObject({ version: '0.0.9', images: { operator: img } });
    const c = YAML.parse(bundleFiles(o).find((f) => f.path === CSV_PATH)!.content) as Obj;
    expect((c.metadata as Obj).name).toBe('vworkspace-operator.v0.0.9');
    expect(((c.metadata as Obj).annotations as Obj).containerImage).toBe(img);
    expect(() => resolveOptions({ IMG: 'quay.io/x/op:latest' })).toThrow(/sha256/);
    expect(() => resolveOptions({ VERSION: 'v1' })).toThrow(/semver/);
  });

  it('leave no stray file in bundle/manifests (each comes from hack/generate.ts or hack/bundle.ts)', () => {
    const known = new Set([...generatedFiles(readRepoFile), ...bundleFiles(opts)].map((f) => f.path));
    expect(manifestNames.map((n) => `bundle/manifests/${n}`).filter((p) => !known.has(p))).toEqual([]);
  });

  it('mirror annotations.yaml in the bundle image labels', () => {
    const dockerfile = bundleFiles(opts).find((f) => f.path === 'bundle.Dockerfile')!.content;
    const labels = Object.fromEntries(
      [...dockerfile.matchAll(/^LABEL (\S+)=(\S+)$/gm)].map((m) => [m[1], m[2]]),
    );
    const annotations = YAML.parse(readRepoFile('bundle/metadata/annotations.yaml')!).annotations;
    expect(labels).toEqual(annotations);
    expect(annotations).toEqual(bundleAnnotations(spec(csv()).minKubeVersion as string));
    expect(dockerfile).toMatch(/^FROM scratch$/m);
  });
});

describe('what the community pipeline reads from the bundle', () => {
  it('offers the bundle on the OpenShift releases whose Kubernetes meets minKubeVersion', () => {
    expect(spec(csv()).minKubeVersion).toBe('1.30.0');
    const annotations = YAML.parse(readRepoFile('bundle/metadata/annotations.yaml')!).annotations;
    expect(annotations['com.redhat.openshift.versions']).toBe('v4.17');
  });

  it('carries the channel edges in the CSV: replaces and olm.skipRange', () => {
    const c = csv();
    expect(spec(c).replaces).toBe('vworkspace-operator.v0.0.9');
    expect((c.metadata as Obj & { annotations: Obj }).annotations['olm.skipRange']).toBe('>=0.0.0 <0.1.0');
    const first = YAML.parse(
      bundleFiles({ ...opts, version: '0.0.9' }).find((f) => f.path === CSV_PATH)!.content,
    ) as Obj;
    expect(spec(first).replaces).toBeUndefined();
  });

  it('labels its platforms and keeps its Pods on them (operator-sdk multiarch)', () => {
    const c = csv();
    expect((c.metadata as Obj).labels).toEqual({
      'operatorframework.io/arch.amd64': 'supported',
      'operatorframework.io/os.linux': 'supported',
    });
    const pod = (deployments(c)[0]!.spec as { template: { spec: Obj } }).template.spec;
    expect(pod.affinity).toMatchObject({
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            {
              matchExpressions: [
                { key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] },
                { key: 'kubernetes.io/os', operator: 'In', values: ['linux'] },
              ],
            },
          ],
        },
      },
    });
  });

  it('names its own operator image per version', () => {
    const image = (v: string) =>
      (
        YAML.parse(
          bundleFiles(resolveOptions({ VERSION: v })).find((f) => f.path === CSV_PATH)!.content,
        ) as Obj & {
          metadata: { annotations: Obj };
        }
      ).metadata.annotations.containerImage;
    expect(image('0.0.9')).not.toBe(image('0.1.0'));
  });
});

describe('CSV consistency', () => {
  it('owns every CRD in the bundle and nothing else', () => {
    expect(ownedCrdProblems(csv(), crds)).toEqual([]);
    expect(crds).toHaveLength(4);
  });

  it('fails when an owned CRD is missing from the bundle', () => {
    const without = crds.filter((c) => (c.metadata as Obj).name !== 'cronoperations.ops.vworkspace.io');
    expect(ownedCrdProblems(csv(), without)).toEqual([
      'owned CRD cronoperations.ops.vworkspace.io is not in bundle/manifests',
    ]);
  });

  it('has descriptors whose paths exist in the CRD schemas', () => {
    expect(descriptorProblems(csv(), crds)).toEqual([]);
    const c = csv();
    const owned = (spec(c).customresourcedefinitions as { owned: Obj[] }).owned;
    (owned[1]!.specDescriptors as Obj[]).push({ path: 'nope.deeper', displayName: 'x' });
    expect(descriptorProblems(c, crds)).toEqual([
      'Operation specDescriptors: spec.nope.deeper is not in the schema',
    ]);
  });

  it('has one alm-example per owned kind', () => {
    expect(almExampleProblems(csv())).toEqual([]);
    const c = csv();
    const ann = (c.metadata as Obj).annotations as Obj;
    ann['alm-examples'] = JSON.stringify(JSON.parse(String(ann['alm-examples'])).slice(1));
    expect(almExampleProblems(c)).toEqual(['alm-examples has 0 ApplicationInstance examples, want 1']);
  });

  it('registers webhooks only for owned resources, on the CSV deployment', () => {
    const c = csv();
    expect(webhookProblems(c)).toEqual([]);
    const hooks = spec(c).webhookdefinitions as Obj[];
    expect(hooks.map((h) => h.webhookPath).sort()).toEqual([
      '/mutate-operation',
      '/mutate-schedule',
      '/validate-applicationinstance',
      '/validate-cronoperation',
      '/validate-operation',
      '/validate-watchoperation',
    ]);
    // Instances never wait for the operator: the controller enforces the same rule.
    expect(hooks.find((h) => h.webhookPath === '/validate-applicationinstance')?.failurePolicy).toBe(
      'Ignore',
    );
    (hooks[0]!.rules as Obj[]).push({
      apiGroups: [''],
      apiVersions: ['v1'],
      operations: ['CREATE'],
      resources: ['pods'],
    });
    hooks[2]!.deploymentName = 'other';
    expect(webhookProblems(c)).toEqual([
      'webhook moperation.ops.vworkspace.io: rule on pods., which the CSV does not own',
      'webhook voperation.ops.vworkspace.io: deploymentName other is not a CSV deployment',
    ]);
  });

  it('lists every RELATED_IMAGE_* and container image in relatedImages, by digest', () => {
    expect(relatedImageProblems(csv())).toEqual([]);
    const c = csv();
    const container = containers(c)[0]!;
    (container.env as Obj[]).push({
      name: 'RELATED_IMAGE_KUBECTL',
      value: `quay.io/x/kubectl@sha256:${'b'.repeat(64)}`,
    });
    (container.env as Obj[]).push({ name: 'RELATED_IMAGE_TAGGED', value: 'quay.io/x/tagged:1.0' });
    expect(relatedImageProblems(c)).toEqual([
      `RELATED_IMAGE_KUBECTL: quay.io/x/kubectl@sha256:${'b'.repeat(64)} has no relatedImages entry`,
      'RELATED_IMAGE_TAGGED: quay.io/x/tagged:1.0 is not by digest',
    ]);
  });

  it('runs the Deployment hardened: 2 replicas, probes, requests and limits, non-root, read-only, no capabilities', () => {
    const c = csv();
    const d = deployments(c)[0]!;
    expect((d.spec as Obj).replicas).toBe(2);
    const pod = ((d.spec as Obj).template as Obj).spec as Obj;
    expect(pod.automountServiceAccountToken).toBe(true);
    expect(pod.securityContext).toEqual({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    const m = containers(c)[0]! as Obj & { resources: { requests: Obj; limits: Obj } };
    expect(Object.keys(m.resources.requests).sort()).toEqual(['cpu', 'memory']);
    expect(Object.keys(m.resources.limits).sort()).toEqual(['cpu', 'memory']);
    expect(m.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(m.livenessProbe).toMatchObject({ httpGet: { path: '/healthz', port: 8081 } });
    expect(m.readinessProbe).toMatchObject({ httpGet: { path: '/readyz', port: 8081 } });
    const env = Object.fromEntries((m.env as Obj[]).map((e) => [e.name, e.value ?? e.valueFrom]));
    expect(env).toMatchObject({
      OPERATOR_NAMESPACE: { fieldRef: { fieldPath: 'metadata.namespace' } },
      LEADER_ELECT: 'true',
      RELATED_IMAGE_HELM: opts.images.helm,
    });
  });
});

describe('NetworkPolicy (beside the bundle) and PodDisruptionBudget', () => {
  const beside = [YAML.parse(readRepoFile(NETWORK_POLICY_PATH)!) as Obj];
  const byKind = (kind: string) => [...manifests, ...beside].filter((m) => m.kind === kind);

  it('ships no NetworkPolicy inside the bundle: the community pipeline refuses one', () => {
    expect(manifests.filter((m) => m.kind === 'NetworkPolicy')).toEqual([]);
    expect(beside[0]?.kind).toBe('NetworkPolicy');
  });

  const podLabels = () => (((deployments(csv())[0]!.spec as Obj).template as Obj).metadata as Obj).labels;
  const ports = () =>
    Object.fromEntries((containers(csv())[0]!.ports as Obj[]).map((p) => [p.name, p.containerPort]));

  it('keeps one of the two replicas through voluntary disruptions', () => {
    const [pdb] = byKind('PodDisruptionBudget') as (Obj & { spec: Obj })[];
    expect(pdb?.spec).toEqual({ minAvailable: 1, selector: { matchLabels: podLabels() } });
  });

  it('admits the webhook and probe ports from addresses (the API server, the kubelet), metrics from scraper namespaces', () => {
    const [np] = byKind('NetworkPolicy') as (Obj & { spec: Obj & { ingress: Obj[] } })[];
    expect(np?.spec.podSelector).toEqual({ matchLabels: podLabels() });
    expect(np?.spec.policyTypes).toEqual(['Ingress']);
    const rule = (port: unknown) => np?.spec.ingress.find((r) => (r.ports as Obj[])[0]?.port === port);
    const { 'webhook-server': webhook, probes, metrics } = ports();
    for (const port of [webhook, probes]) {
      const from = rule(port)?.from as Obj[];
      expect(from.filter((f) => f.ipBlock).map((f) => (f.ipBlock as Obj).cidr)).toEqual([
        '0.0.0.0/0',
        '::/0',
      ]);
      // No pod or namespace of the cluster is a peer (OpenShift's host-network group is not pods).
      expect(from.some((f) => f.podSelector)).toBe(false);
    }
    const scrapers = rule(metrics)?.from as Obj[];
    expect(scrapers).toContainEqual({
      namespaceSelector: { matchLabels: { [METRICS_SCRAPER_LABEL]: 'true' } },
    });
    expect(scrapers.some((f) => f.ipBlock)).toBe(false);
    expect(np?.spec.ingress).toHaveLength(3);
  });
});

describe('RBAC', () => {
  const perms = (c: Obj, key: 'permissions' | 'clusterPermissions') =>
    (spec(c).install.spec[key] as { rules: Rule[] }[]).flatMap((p) => p.rules);

  it('grants exactly the declared operator rules (operator/src/rbac/operator.ts), nothing broader', () => {
    const c = csv();
    expect(
      rbacProblems('clusterPermissions', perms(c, 'clusterPermissions'), OPERATOR_CLUSTER_RULES),
    ).toEqual([]);
    expect(rbacProblems('permissions', perms(c, 'permissions'), OPERATOR_NAMESPACE_RULES)).toEqual([]);
    expect(
      clusterWriteProblems(perms(c, 'clusterPermissions'), ['apps.vworkspace.io', 'ops.vworkspace.io']),
    ).toEqual([]);
  });

  it('fails on a rule broader than the declared list', () => {
    const c = csv();
    const rules = perms(c, 'clusterPermissions');
    rules.push({ apiGroups: [''], resources: ['secrets'], verbs: ['get'] });
    rules.push({ apiGroups: ['batch'], resources: ['*'], verbs: ['create'] });
    rules.push({
      apiGroups: ['rbac.authorization.k8s.io'],
      resources: ['clusterroles'],
      verbs: ['escalate'],
    });
    // Namespaces beyond create and delete (the scratch namespace's): patch would relabel anyone's.
    rules.push({ apiGroups: [''], resources: ['namespaces'], verbs: ['patch'] });
    expect(rbacProblems('clusterPermissions', rules, OPERATOR_CLUSTER_RULES)).toEqual([
      'clusterPermissions: get secrets. is not in the declared list',
      'clusterPermissions: wildcard resource *.batch',
      'clusterPermissions: create *.batch is not in the declared list',
      'clusterPermissions: verb escalate on clusterroles.rbac.authorization.k8s.io',
      'clusterPermissions: patch namespaces. is not in the declared list',
    ]);
    expect(clusterWriteProblems(rules, ['apps.vworkspace.io', 'ops.vworkspace.io'])).toEqual([
      'cluster-wide get secrets',
      'cluster-wide create on *.batch',
      'cluster-wide escalate on clusterroles.rbac.authorization.k8s.io',
      'cluster-wide patch on namespaces.',
    ]);
  });

  it('ships every profile ClusterRole with no rule beyond its profile', () => {
    const roles = manifests.filter((m) => m.kind === 'ClusterRole');
    expect(roles.map((r) => (r.metadata as Obj).name).sort()).toEqual(
      RBAC_PROFILE_LIST.map((p) => (profileClusterRole(p).metadata as Obj).name).sort(),
    );
    for (const p of RBAC_PROFILE_LIST) {
      const declared = profileClusterRole(p) as { metadata: { name: string }; rules: Rule[] };
      const shipped = roles.find((r) => (r.metadata as Obj).name === declared.metadata.name) as {
        rules: Rule[];
      };
      expect(rbacProblems(declared.metadata.name, shipped.rules, declared.rules)).toEqual([]);
    }
  });
});

describe('bundle size', () => {
  const files = () =>
    manifestNames
      .map((n) => ({ path: n, content: readRepoFile(`bundle/manifests/${n}`)! }))
      .concat([{ path: 'annotations.yaml', content: readRepoFile('bundle/metadata/annotations.yaml')! }]);

  it('is under the 1 MiB gzipped limit', () => {
    expect(bundleSizeProblems(files())).toEqual([]);
  });

  it('fails over the limit', () => {
    const big = { path: 'big.yaml', content: randomBytes(1200 * 1024).toString('base64') };
    expect(bundleSizeProblems([...files(), big])).toEqual([expect.stringMatching(/over the 1048576 limit/)]);
  });
});

describe('operator-sdk bundle validate --select-optional suite=operatorframework', () => {
  const validate = (dir: string) =>
    sdkFindings(
      runTool(ROOT, 'operator-sdk', [
        'bundle',
        'validate',
        dir,
        '--select-optional',
        'suite=operatorframework',
        '--output',
        'json-alpha1',
      ]),
    );

  it('reports no error and no warning for bundle/', () => {
    expect(validate('./bundle')).toEqual([]);
  });

  it('with the NetworkPolicy inside (--with-network-policy) reports only the kind it predates', () => {
    // operator-sdk v1.34.1 (the newest the module mirror serves) embeds operator-registry v1.35.0, whose
    // list of registry+v1 kinds predates NetworkPolicy; operator-registry v1.65.0 (our opm) and OLM v0.38.0
    // accept it (docs/adr/0004-olm-packaging.md).
    const dir = mkdtempSync(join(tmpdir(), 'vws-bundle-'));
    try {
      writeBundleDir(dir, opts, { networkPolicy: true });
      expect(validate(dir)).toEqual([
        {
          level: 'error',
          message:
            'Error: Value networking.k8s.io/v1, Kind=NetworkPolicy: unsupported media type registry+v1 for bundle object',
        },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reports the warnings it finds (a container without resource requests)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vws-bundle-'));
    try {
      writeBundleDir(dir, opts);
      const path = join(dir, 'manifests', 'vworkspace-operator.clusterserviceversion.yaml');
      const c = csv();
      delete (containers(c)[0] as Obj).resources;
      writeFileSync(path, YAML.stringify(c));
      const findings = validate(dir);
      expect(findings.some((f) => f.level === 'warning' && /resource requests/.test(f.message))).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the monitoring bundle (--with-monitoring: ServiceMonitor and PrometheusRule inside)', () => {
  it('passes operator-sdk bundle validate and opm validate with no finding', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vws-bundle-'));
    const catalog = mkdtempSync(join(tmpdir(), 'vws-catalog-'));
    try {
      writeBundleDir(dir, opts, { monitoring: true });
      const kinds = readdirSync(join(dir, 'manifests')).map(
        (n) => (YAML.parse(readFileSync(join(dir, 'manifests', n), 'utf8')) as Obj).kind,
      );
      expect(kinds).toEqual(expect.arrayContaining(['PrometheusRule', 'ServiceMonitor']));
      expect(
        sdkFindings(
          runTool(ROOT, 'operator-sdk', [
            'bundle',
            'validate',
            dir,
            '--select-optional',
            'suite=operatorframework',
            '--output',
            'json-alpha1',
          ]),
        ),
      ).toEqual([]);
      // Its olm.bundle as opm renders the directory, in a one-version catalog (writeCatalog runs opm
      // validate and throws on any finding).
      const rendered = runTool(ROOT, 'opm', ['render', dir, '--output', 'yaml']);
      expect(rendered.code, rendered.stderr).toBe(0);
      const name = bundleName(PACKAGE_NAME, opts.version);
      const fbc = [
        YAML.stringify({ schema: 'olm.package', name: PACKAGE_NAME, defaultChannel: 'stable' }),
        YAML.stringify({ schema: 'olm.channel', package: PACKAGE_NAME, name: 'stable', entries: [{ name }] }),
        rendered.stdout.replace(/^---\n/, ''),
      ].join('---\n');
      expect(() => writeCatalog(catalog, fbc)).not.toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(catalog, { recursive: true, force: true });
    }
  });

  it('is not the default bundle: bundle/ ships no monitoring.coreos.com object', () => {
    expect(manifests.filter((m) => String(m.apiVersion).startsWith('monitoring.coreos.com/'))).toEqual([]);
  });
});

describe('operator Dockerfile', () => {
  const text = readRepoFile('Dockerfile')!;
  it('pins every base image by digest, installs production deps only and runs as 65532', () => {
    const froms = [...text.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]!);
    expect(froms.length).toBeGreaterThanOrEqual(2);
    for (const f of froms) expect(f).toMatch(/@sha256:[a-f0-9]{64}$/);
    expect(text).toMatch(/npm ci --omit=dev/);
    expect(text).toMatch(/^USER 65532/m);
    expect(text).toMatch(/operator\/src\/main\.ts/);
  });

  it('runs node with the operator flags, as the image the project builds does', () => {
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(text)?.[1];
    expect(JSON.parse(entrypoint ?? 'null')).toEqual(['/nodejs/bin/node', ...operatorNodeArgs()]);
  });
});
