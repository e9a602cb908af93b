import { resourcePath } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adapterFor } from '../../../operator/src/engines/index.ts';
import { profileClusterRole } from '../../../operator/src/rbac/clusterroles.ts';
import { profileClusterRoleName, rbacProfile } from '../../../operator/src/rbac/profiles.ts';
import { fakeAdapter } from '../../support/builders/operation.ts';
import { EngineSimulator } from '../../support/simulator.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';
import { apply, grant, operatorIdentity } from './identity.ts';
import { Api, cond, eventually, type RunningController, startController } from './support.ts';

describe('RbacProfileMissing with a least-privilege identity', () => {
  const admin = adminKubeConfig();
  const api = new Api(admin);
  let ctl: RunningController;
  let ns: string;

  beforeAll(async () => {
    ns = await createNamespace(admin, 'oprbac');
    const kc = await operatorIdentity(admin, api, ns);
    const fake = fakeAdapter('workflow');
    ctl = startController(kc, (e) => (e === 'workflow' ? fake : undefined), { graceMs: 600_000 });
  });
  afterAll(async () => {
    await ctl.stop();
  });

  it('waits Accepted=False/RbacProfileMissing, then starts once the profile is bound', async () => {
    await api.createInstance(ns, 'app', { backup: 'workflow' }, true);
    await api.createOperation(ns, 'needs-grant', { type: 'Backup' });
    const waiting = await eventually('RbacProfileMissing', async () => {
      const op = await api.getOperation(ns, 'needs-grant');
      return cond(op, 'Accepted')?.reason === 'RbacProfileMissing' ? op : undefined;
    });
    expect(waiting.status?.phase).toBe('Pending');
    expect(cond(waiting, 'Succeeded')).toMatchObject({ status: 'Unknown', reason: 'RbacProfileMissing' });
    expect(cond(waiting, 'Accepted')?.message).toContain('vworkspace-profile-runbook-workflow');
    expect(await api.configMaps(ns)).toEqual([]);

    // The test templates run the runbook.workflow profile; the fake child is a ConfigMap, so the grant
    // adds that to the profile role for this test.
    const profile = profileClusterRole(rbacProfile('runbook.workflow')!);
    const rules = [
      ...(profile.rules as object[]),
      {
        apiGroups: [''],
        resources: ['configmaps'],
        verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
      },
    ];
    const name = profileClusterRoleName('runbook.workflow');
    const rbac = { group: 'rbac.authorization.k8s.io', version: 'v1' };
    await apply(api, resourcePath({ ...rbac, plural: 'clusterroles' }, name), { ...profile, rules });
    await apply(api, resourcePath({ ...rbac, plural: 'rolebindings', namespace: ns }, 'vworkspace-runbook'), {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'vworkspace-runbook', namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ kind: 'ServiceAccount', name: 'operator', namespace: ns }],
    });
    const running = await eventually('Running after the grant', async () => {
      const op = await api.getOperation(ns, 'needs-grant');
      return op.status?.phase === 'Running' ? op : undefined;
    });
    expect(cond(running, 'Accepted')).toMatchObject({ status: 'True', reason: 'TemplateValidated' });
    expect((await api.configMaps(ns)).length).toBe(1);
  });
});

describe('the real velero adapter with the engine simulator', () => {
  const admin = adminKubeConfig();
  const api = new Api(admin);
  let ctl: RunningController;
  let sim: EngineSimulator;
  let ns: string;
  let veleroNs: string;

  beforeAll(async () => {
    ns = await createNamespace(admin, 'opvel');
    veleroNs = await createNamespace(admin, 'velero');
    const kc = await operatorIdentity(admin, api, ns);
    await grant(api, 'backup.velero', veleroNs, ns);
    ctl = startController(kc, adapterFor, { veleroNamespace: veleroNs });
    sim = new EngineSimulator(api.client, { namespaces: [veleroNs], intervalMs: 100 });
    sim.start();
  });
  afterAll(async () => {
    await sim.stop();
    await ctl.stop();
  });

  it('a Backup Operation creates a velero.io Backup in the Velero namespace and ends Succeeded with backupName', async () => {
    await api.createInstance(ns, 'app', { backup: 'velero' }, true);
    await api.createOperation(ns, 'vb', { type: 'Backup', engine: 'velero', parameters: { ttl: '24h' } });
    const done = await eventually(
      'Succeeded',
      async () => {
        const op = await api.getOperation(ns, 'vb');
        return op.status?.phase === 'Succeeded' ? op : undefined;
      },
      60_000,
    );
    expect(done.status?.childRef).toMatchObject({
      apiVersion: 'velero.io/v1',
      kind: 'Backup',
      namespace: veleroNs,
    });
    expect(cond(done, 'Succeeded')).toMatchObject({ status: 'True', reason: 'VeleroBackupCompleted' });
    expect(done.status?.outputs).toMatchObject({ backupName: done.status?.childRef?.name });
    const backup = await api.client.request<{
      metadata: { labels: Record<string, string> };
      spec: { includedNamespaces: string[]; orLabelSelectors: unknown[] };
    }>({
      method: 'GET',
      path: resourcePath(
        { group: 'velero.io', version: 'v1', plural: 'backups', namespace: veleroNs },
        done.status!.childRef!.name,
      ),
    });
    expect(backup.metadata.labels).toMatchObject({
      'ops.vworkspace.io/operation': 'vb',
      'ops.vworkspace.io/operation-namespace': ns,
    });
    expect(backup.spec.includedNamespaces).toEqual([ns]);
    expect(backup.spec.orLabelSelectors).toEqual([
      { matchLabels: { 'app.kubernetes.io/instance': 'app' } },
      { matchLabels: { owner: 'helm', name: 'app' } },
      { matchLabels: { 'ops.vworkspace.io/release': 'app' } },
    ]);
    // The instance carries the label the third selector matches, set before the Backup was made.
    const instance = await api.client.request<{ metadata: { labels?: Record<string, string> } }>({
      method: 'GET',
      path: resourcePath(
        { group: 'apps.vworkspace.io', version: 'v1alpha1', plural: 'applicationinstances', namespace: ns },
        'app',
      ),
    });
    expect(instance.metadata.labels).toMatchObject({ 'ops.vworkspace.io/release': 'app' });
  });
});
