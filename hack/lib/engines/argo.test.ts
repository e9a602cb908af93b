import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ARGO_CONFIGMAP,
  argoClusterRole,
  argoControllerDeployment,
  argoCrdFiles,
  argoObjects,
  crdFilesToInstall,
  crdNameOf,
  workflowRunnerObjects,
} from './argo.ts';

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };
const rules = (o: Record<string, unknown>) => o.rules as Rule[];
const allows = (rs: Rule[], group: string, resource: string, verb: string) =>
  rs.some((r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb));

/** Temporary directories of the test that is running, removed after it. */
const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'vws-argo-crds-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('Argo install manifests', () => {
  it("the controller's cluster role: workflow pods (and exec, to signal them), templates read-only, task results listed", () => {
    const rs = rules(argoClusterRole());
    for (const verb of ['create', 'delete', 'patch']) expect(allows(rs, '', 'pods', verb)).toBe(true);
    expect(allows(rs, '', 'pods/exec', 'create')).toBe(true);
    expect(allows(rs, 'argoproj.io', 'workflows', 'update')).toBe(true);
    expect(allows(rs, 'argoproj.io', 'workflowtemplates', 'get')).toBe(true);
    expect(allows(rs, 'argoproj.io', 'workflowtemplates', 'update')).toBe(false);
    expect(allows(rs, 'argoproj.io', 'workflowtaskresults', 'watch')).toBe(true);
    expect(allows(rs, 'argoproj.io', 'workflowtaskresults', 'create')).toBe(false);
    // The one Secret it may read cluster-wide is named.
    expect(rs.find((r) => r.resources.includes('secrets'))?.resourceNames).toEqual([
      'argo-workflows-agent-ca-certificates',
    ]);
  });

  it('namespace, account, bindings to it, the Lease role and the ConfigMap the controller requires', () => {
    const objs = argoObjects('argo-x');
    expect(objs.map((o) => o.kind)).toEqual([
      'Namespace',
      'ServiceAccount',
      'ClusterRole',
      'ClusterRoleBinding',
      'Role',
      'RoleBinding',
      'ConfigMap',
    ]);
    for (const b of objs.filter((o) => String(o.kind).endsWith('Binding')))
      expect(b.subjects).toEqual([{ kind: 'ServiceAccount', name: 'argo', namespace: 'argo-x' }]);
    const role = objs.find((o) => o.kind === 'Role') as Record<string, unknown>;
    expect(allows(rules(role), 'coordination.k8s.io', 'leases', 'update')).toBe(true);
    expect(objs.at(-1)).toMatchObject({ metadata: { name: ARGO_CONFIGMAP, namespace: 'argo-x' } });
  });

  it('the controller Deployment runs our images, the executor by digest through --executor-image, cluster-wide', () => {
    const d = argoControllerDeployment('r/ctl@sha256:a', 'r/exec@sha256:b', 'argo-x');
    expect(d).toMatchObject({ metadata: { name: 'workflow-controller', namespace: 'argo-x' } });
    const spec = (d.spec as { template: { spec: Record<string, unknown> } }).template.spec;
    const [c] = spec.containers as { image: string; args: string[]; securityContext: unknown }[];
    expect(spec.serviceAccountName).toBe('argo');
    expect(c?.image).toBe('r/ctl@sha256:a');
    expect(c?.args).toEqual([
      '--configmap',
      ARGO_CONFIGMAP,
      '--executor-image',
      'r/exec@sha256:b',
      '--loglevel',
      'info',
    ]);
    expect(c?.args).not.toContain('--namespaced');
    expect((c as { env?: unknown[] })?.env).toContainEqual({ name: 'DEFAULT_REQUEUE_TIME', value: '1s' });
    expect(c?.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
    });
  });

  it("the workflows' ServiceAccount gets Argo's executor rights and nothing else", () => {
    const [sa, role, binding] = workflowRunnerObjects('team', 'runner');
    expect(sa).toMatchObject({ kind: 'ServiceAccount', metadata: { name: 'runner', namespace: 'team' } });
    expect(rules(role as Record<string, unknown>)).toEqual([
      { apiGroups: ['argoproj.io'], resources: ['workflowtaskresults'], verbs: ['create', 'patch'] },
    ]);
    expect(binding).toMatchObject({
      roleRef: { kind: 'Role', name: 'argo-executor' },
      subjects: [{ kind: 'ServiceAccount', name: 'runner', namespace: 'team' }],
    });
  });

  it('reads the full CRDs hack/build-tools.sh copied, and says how to get them when there are none', () => {
    const dir = tempDir();
    expect(() => argoCrdFiles(dir)).toThrow(/hack\/build-tools\.sh argo/);
    expect(() => argoCrdFiles(join(dir, 'missing'))).toThrow(/holds no CRDs/);
    writeFileSync(join(dir, 'argoproj.io_workflows.yaml'), '');
    writeFileSync(join(dir, 'argoproj.io_cronworkflows.yaml'), '');
    writeFileSync(join(dir, 'README.md'), '');
    expect(argoCrdFiles(dir)).toEqual([
      join(dir, 'argoproj.io_cronworkflows.yaml'),
      join(dir, 'argoproj.io_workflows.yaml'),
    ]);
  });

  it('sends only the CRDs the API server does not already serve from an identical file', () => {
    const dir = tempDir();
    const file = (plural: string, text: string) => {
      const p = join(dir, `argoproj.io_${plural}.yaml`);
      writeFileSync(p, text);
      return p;
    };
    const wf = file('workflows', 'v3.7.3 workflows');
    const tmpl = file('workflowtemplates', 'v3.7.3 templates');
    const results = file('workflowtaskresults', 'v3.7.3 results');
    expect(crdNameOf(wf)).toBe('workflows.argoproj.io');
    expect(() => crdNameOf(join(dir, 'README.md'))).toThrow(/argoproj\.io_<plural>\.yaml/);
    const node: Record<string, string> = { [wf]: 'v3.7.3 workflows', [tmpl]: 'v3.6.0 templates' };
    const served = new Set(['workflows.argoproj.io', 'workflowtemplates.argoproj.io']);
    // workflows: same file, served ⇒ skipped; templates: served but from another file ⇒ replaced;
    // task results: not from the node at all ⇒ installed.
    expect(crdFilesToInstall([wf, tmpl, results], (f) => node[f], served)).toEqual([tmpl, results]);
    // Same file but not served (the node was started without CRDs) ⇒ installed.
    expect(crdFilesToInstall([wf], (f) => node[f], new Set())).toEqual([wf]);
  });
});
