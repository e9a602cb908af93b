// Item 1 of the threat model: the helmHookJob engine runs the Job a namespace ConfigMap holds when
// parameters.configMapName names it (else the release's Helm hooks, ADR 0017). A tenant with only
// ConfigMap write and the `migration` verb must not get a pod with host access, privilege, root or a
// cluster-admin ServiceAccount through the operator: the spec is untrusted, refused with a condition
// naming the field, and what runs is forced to the restricted standard and a ServiceAccount the template
// allows. A ConfigMap no Operation names is never read.

import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { startWorld, type World } from './harness.ts';
import { adminServiceAccount, childrenOf, jobsIn, settled } from './support.ts';

const ADMIN_SA = 'migrator-admin';

/** The Job a chart would render, with `pod` merged into its pod spec and `container` into its container. */
function migrationJob(pod: Record<string, unknown> = {}, container: Record<string, unknown> = {}) {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'shop-migrate' },
    spec: {
      template: {
        spec: {
          restartPolicy: 'Never',
          containers: [
            { name: 'migrate', image: 'docker.io/library/busybox:1.37.0', command: ['true'], ...container },
          ],
          ...pod,
        },
      },
    },
  };
}

/** Everything the reproduction asked for: host namespaces, privilege, SYS_ADMIN, root, the node's /, cluster-admin. */
const HOSTILE = migrationJob(
  {
    hostPID: true,
    hostNetwork: true,
    serviceAccountName: ADMIN_SA,
    volumes: [{ name: 'host', hostPath: { path: '/' } }],
  },
  {
    securityContext: {
      privileged: true,
      allowPrivilegeEscalation: true,
      runAsUser: 0,
      capabilities: { add: ['SYS_ADMIN'] },
    },
    volumeMounts: [{ name: 'host', mountPath: '/host' }],
  },
);

describe('migration: the Job in the namespace ConfigMap is untrusted', () => {
  let w: World;
  let ns: string;
  const mallory = () => w.as('mallory');

  async function writeConfigMap(name: string, job: unknown) {
    await mallory().request({
      method: 'POST',
      path: `/api/v1/namespaces/${ns}/configmaps`,
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name },
        data: { 'job.yaml': YAML.stringify(job) },
      },
    });
  }

  const migrate = (name: string, parameters: Record<string, unknown> = {}) =>
    w.operation(mallory(), ns, name, {
      type: 'Migration',
      engine: 'helmHookJob',
      targetRef: { name: 'shop' },
      parameters,
      policy: { requireReady: false },
    });

  beforeAll(async () => {
    w = await startWorld();
    ns = w.namespaces[0];
    await w.instance(ns, 'shop', { migration: 'helmHookJob' });
    await w.grantProfile('migration.helmHookJob', ns);
    await adminServiceAccount(w, ns, ADMIN_SA);
    // Only ConfigMap write and the migration verb: no Jobs, no pods, no ServiceAccounts.
    await w.grant('mallory', ns, [
      { apiGroups: [''], resources: ['configmaps'], verbs: ['create', 'update', 'get'] },
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['migration'] },
    ]);
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('refuses host namespaces, host paths, privilege, capabilities and root with UnsafePodSpec, and creates no Job', async () => {
    await writeConfigMap('shop-vworkspace-migration', HOSTILE);
    await migrate('take-the-node', { configMapName: 'shop-vworkspace-migration' });
    const out = await settled(w, ns, 'take-the-node');
    expect(out.op.status?.phase).toBe('Failed');
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'UnsafePodSpec' });
    for (const field of [
      'spec.template.spec.hostNetwork',
      'spec.template.spec.hostPID',
      'spec.template.spec.volumes[0].hostPath',
      'spec.template.spec.containers[0].securityContext.privileged',
      'spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation',
      'spec.template.spec.containers[0].securityContext.runAsUser',
      'spec.template.spec.containers[0].securityContext.capabilities.add',
    ]) {
      expect(out.accepted?.message).toContain(`${field}: `);
    }
    expect(out.accepted?.message).toContain('ConfigMap shop-vworkspace-migration');
    expect(await childrenOf(w, jobsIn(ns), 'take-the-node')).toEqual([]);
  });

  it("never runs a ConfigMap no Operation names: without configMapName only the release's Helm hooks run", async () => {
    // The hostile ConfigMap of the first test still holds the old default name.
    await migrate('unnamed');
    const out = await settled(w, ns, 'unnamed');
    expect(out.op.status?.phase).toBe('Failed');
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'CapabilityMissing' });
    expect(out.accepted?.message).toContain('Helm release shop has no release record');
    expect(await childrenOf(w, jobsIn(ns), 'unnamed')).toEqual([]);
  });

  it('refuses a ServiceAccount the template does not allow, with NotAllowedByTemplate, and creates no Job', async () => {
    await writeConfigMap('as-admin', migrationJob({ serviceAccountName: ADMIN_SA }));
    await migrate('be-admin', { configMapName: 'as-admin' });
    const out = await settled(w, ns, 'be-admin');
    expect(out.op.status?.phase).toBe('Failed');
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'NotAllowedByTemplate' });
    expect(out.accepted?.message).toContain(
      `spec.template.spec.serviceAccountName: ServiceAccount "${ADMIN_SA}"`,
    );
    expect(await childrenOf(w, jobsIn(ns), 'be-admin')).toEqual([]);
  });

  it('reads the ConfigMap parameters.configMapName names, and runs its Job restricted as the runner ServiceAccount', async () => {
    await writeConfigMap('custom-migration', migrationJob());
    await migrate('plain', { configMapName: 'custom-migration' });
    const out = await settled(w, ns, 'plain');
    expect(out.op.status?.phase).toBe('Running');
    const [job] = await childrenOf(w, jobsIn(ns), 'plain');
    const pod = (job as KubernetesObject & { spec: { template: { spec: Record<string, unknown> } } }).spec
      .template.spec;
    expect(pod).toMatchObject({
      serviceAccountName: 'vworkspace-runner',
      securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          command: ['true'],
          securityContext: {
            privileged: false,
            allowPrivilegeEscalation: false,
            capabilities: { drop: ['ALL'] },
          },
        },
      ],
    });
    // The API server omits false booleans: unset host namespaces are the ones forced off.
    expect([pod.hostPID, pod.hostNetwork, pod.hostIPC].filter(Boolean)).toEqual([]);
  });
});
