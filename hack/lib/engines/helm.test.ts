import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import {
  HELM_RUNNER_ROLE,
  helmRunnerRole,
  mergedValues,
  RUNNER_SERVICE_ACCOUNT,
  runnerRoleBinding,
  runnerServiceAccount,
  stateRequest,
  TINY_VERSIONS,
} from './helm.ts';

describe("the helm runner's RBAC, as a namespace admin grants it", () => {
  it('release records (Secrets) plus get/create/patch/delete on each kind the chart renders, nothing cluster-wide', () => {
    const role = helmRunnerRole('shop', [
      { apiGroup: '', resource: 'configmaps' },
      { apiGroup: 'apps', resource: 'deployments' },
      { apiGroup: '', resource: 'services' },
      { apiGroup: '', resource: 'configmaps' },
    ]);
    expect(role).toEqual({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: HELM_RUNNER_ROLE, namespace: 'shop' },
      rules: [
        { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'create', 'update', 'delete'] },
        {
          apiGroups: [''],
          resources: ['configmaps', 'services'],
          verbs: ['get', 'create', 'patch', 'delete'],
        },
        { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'create', 'patch', 'delete'] },
      ],
    });
  });

  it('binds the role to the runner ServiceAccount of the same namespace', () => {
    expect(runnerServiceAccount('shop')).toEqual({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: RUNNER_SERVICE_ACCOUNT, namespace: 'shop' },
    });
    expect(runnerRoleBinding('shop', HELM_RUNNER_ROLE)).toEqual({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: HELM_RUNNER_ROLE, namespace: 'shop' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: HELM_RUNNER_ROLE },
      subjects: [{ kind: 'ServiceAccount', name: RUNNER_SERVICE_ACCOUNT, namespace: 'shop' }],
    });
  });
});

describe('the chart versions of the repository', () => {
  it('merges changed defaults into values.yaml, one level deep', () => {
    const merged = YAML.parse(
      mergedValues('message: hello\nbroken: false\nmigration:\n  enabled: false\n  schema: 1\n', {
        broken: true,
        migration: { schema: 2 },
      }),
    );
    expect(merged).toEqual({ message: 'hello', broken: true, migration: { enabled: false, schema: 2 } });
  });

  it('A and B are distinct versions; the broken version breaks by its defaults, not by values', () => {
    const versions = Object.values(TINY_VERSIONS).map((v) => v.version);
    expect(new Set(versions).size).toBe(versions.length);
    expect(TINY_VERSIONS.broken.defaults).toEqual({ broken: true });
  });
});

describe("the migration hooks' store", () => {
  it('GET answers 404 until a POST stored the key, then its value; bad keys and methods are refused', () => {
    const state = new Map<string, string>();
    expect(stateRequest(state, 'GET', 'ns/db/prepared', '')).toEqual({ status: 404, body: 'not found\n' });
    expect(stateRequest(state, 'POST', 'ns/db/prepared', 'schema 7')).toEqual({ status: 201, body: '' });
    expect(stateRequest(state, 'GET', 'ns/db/prepared', '')).toEqual({ status: 200, body: 'schema 7' });
    expect(state).toEqual(new Map([['ns/db/prepared', 'schema 7']]));
    expect(stateRequest(state, 'GET', '../etc/passwd', '').status).toBe(400);
    expect(stateRequest(state, 'GET', 'a/b/c/d', '').status).toBe(400);
    expect(stateRequest(state, 'DELETE', 'ns/db/prepared', '').status).toBe(405);
  });
});
