// The install without OLM on a real node (docs/install.md "Without OLM"; ADR 0032): the chart generated
// from the bundle (deploy/chart), packaged and pushed to the node's registry as an OCI artifact the way a
// release pushes it, installed with `helm install` as a user types it, onto a cluster without our CRDs.
// The operator then runs as real pods on the node, on the RBAC the chart made, its webhooks reached
// through the Service with the CA the install generated, and a RunCommand really runs. `helm uninstall`
// takes the operator away and keeps the CRDs (and so the Operations). Runs on real-node.test.ts's node,
// before the OLM journey, which then takes the CRDs over.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { isNotFound } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorImage, pushBuilt } from '../../../hack/images/build.ts';
import type { RealNode } from '../../../hack/lib/real-node.ts';
import { CHART_DIR } from '../../../hack/packaging/chart.ts';
import { DEPLOYMENT_NAME, PACKAGE_NAME, SERVICE_ACCOUNT } from '../../../hack/packaging/csv.ts';
import { ALL_KINDS } from '../../../operator/src/api/index.ts';
import type { Operation } from '../../../operator/src/api/operation.ts';
import { eventually } from '../../support/eventually.ts';
import { helm, TINY_CHART, tinyInstance } from '../../support/helm.ts';
import {
  APP,
  createOperation,
  getOperation,
  opPath,
  RUNNER_SA,
  refusal,
  veleroBackup,
} from '../support/app.ts';
import { CURRENT_VERSION } from '../support/install.ts';
import { grantProfile } from '../support/rbac.ts';

const NS = 'vworkspace-system';
const TEAM = 'chart-team';
const RELEASE = PACKAGE_NAME;

interface Pod extends KubernetesObject {
  spec: { containers: { image: string }[] };
  status?: { phase?: string; containerStatuses?: { ready?: boolean }[] };
}

/** The chart journey on the node `theNode()` returns once the shared beforeAll has started it. */
export function chartJourney(theNode: () => RealNode, say: (line: string) => void): void {
  describe('the install without OLM (Helm chart) on a real node', () => {
    let node: RealNode;
    let workdir: string;
    let image: string;
    let chartRef: string;
    const user = (args: string[]) => {
      say(`$ helm ${args.join(' ')}`);
      return helm(node.kubeconfigPath, args);
    };
    const crdPath = (name?: string) =>
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions${name ? `/${name}` : ''}`;
    const crdNames = ALL_KINDS.map((k) => `${k.resource.plural}.${k.resource.group}`);
    const exists = async (path: string) =>
      node.client.request({ method: 'GET', path }).then(
        () => true,
        (e: unknown) => (isNotFound(e) ? false : Promise.reject(e)),
      );
    const pods = async () =>
      (
        await node.client.request<{ items: Pod[] }>({
          method: 'GET',
          path: `/api/v1/namespaces/${NS}/pods`,
          query: { labelSelector: 'app.kubernetes.io/name=vworkspace-operator' },
        })
      ).items;

    beforeAll(async () => {
      node = theNode();
      workdir = await mkdtemp(join(tmpdir(), 'vws-e2e-real-chart-'));
      // What `make release` pushes: the operator image by digest, and the chart as an OCI artifact.
      const built = operatorImage(node.registryPrefix, CURRENT_VERSION);
      pushBuilt(built, workdir);
      image = built.ref;
      await helm(node.kubeconfigPath, ['package', CHART_DIR, '--destination', workdir]);
      const tgz = join(workdir, `${PACKAGE_NAME}-${CURRENT_VERSION}.tgz`);
      await helm(node.kubeconfigPath, ['push', tgz, `oci://${node.registryPrefix}/charts`, '--plain-http']);
      chartRef = `oci://${node.registryPrefix}/charts/${PACKAGE_NAME}`;
      say(`chart ${chartRef}:${CURRENT_VERSION} and operator image ${image} in the node's registry`);
      // A cluster that never had the operator: the node's control plane installs our CRDs; remove them.
      for (const name of crdNames) await node.client.request({ method: 'DELETE', path: crdPath(name) });
      await eventually(
        'our CRDs gone',
        async () =>
          (await Promise.all(crdNames.map((n) => exists(crdPath(n))))).some(Boolean) ? undefined : true,
        120_000,
        500,
      );
    });

    afterAll(async () => {
      if (workdir) await rm(workdir, { recursive: true, force: true });
    });

    it('helm install: CRDs, RBAC, webhooks with a generated CA, and the operator as real pods', async () => {
      const digest = image.slice(image.indexOf('@') + 1);
      const out = await user([
        'install',
        RELEASE,
        chartRef,
        '--version',
        CURRENT_VERSION,
        '--plain-http',
        '--namespace',
        NS,
        '--create-namespace',
        '--set',
        `image.repository=${node.registryPrefix}/${PACKAGE_NAME}`,
        '--set',
        `image.digest=${digest}`,
        '--wait',
        '--timeout',
        '300s',
      ]);
      for (const line of out.stdout.split('\n')) say(`  ${line}`);
      expect(out.stdout).toMatch(/STATUS: deployed/);
      expect(out.stdout).toContain(
        `The vworkspace-operator ${CURRENT_VERSION} is installed in ${NS}, watching every namespace.`,
      );
      for (const name of crdNames) expect(await exists(crdPath(name)), name).toBe(true);
      const ps = await pods();
      expect(ps.length).toBe(2);
      for (const p of ps) {
        expect(p.status?.phase).toBe('Running');
        expect(p.spec.containers[0]?.image).toBe(image);
      }
      const [pid] = node.podProcesses((argv) => argv.includes('operator/src/main.ts'));
      expect(pid, 'the operator process on the host').toBeDefined();
      expect(readFileSync(`/proc/${pid}/status`, 'utf8')).toMatch(/^Uid:\s+65532\s+65532/m);
    });

    it("the API server calls its webhooks through the chart's Service, trusting the install's CA", async () => {
      await node.client.request({
        method: 'POST',
        path: '/api/v1/namespaces',
        body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: TEAM } },
      });
      // `helm install --wait` returns once the pods are Ready; kube-proxy programs the Service's endpoints a
      // moment later (until then the API server's call is refused at the ClusterIP), as a user may see too.
      const msg = await eventually(
        "the webhook's answer through the chart's Service",
        async () => {
          const m = await refusal(createOperation(node.client, TEAM, 'bad-ttl', veleroBackup('forever')));
          return /failed calling webhook/.test(m) ? undefined : m;
        },
        60_000,
        1000,
      );
      say(`invalid parameter: ${msg}`);
      expect(msg).toMatch(/admission webhook "voperation\.ops\.vworkspace\.io" denied the request/);
    });

    it('reconciles a Helm-deployed app and runs a RunCommand in a namespace that granted the profile', async () => {
      await helm(node.kubeconfigPath, ['install', APP, TINY_CHART, '-n', TEAM]);
      await node.client.request({
        method: 'POST',
        path: `/api/v1/namespaces/${TEAM}/serviceaccounts`,
        body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: RUNNER_SA } },
      });
      await node.client.request({
        method: 'POST',
        path: `/apis/apps.vworkspace.io/v1alpha1/namespaces/${TEAM}/applicationinstances`,
        body: tinyInstance(APP, TEAM),
      });
      // Ready comes from the Helm release record, read by the operator pods on the chart's RBAC.
      await eventually(
        `ApplicationInstance ${TEAM}/${APP} Ready`,
        async () => {
          const ai = await node.client.request<{
            status?: { conditions?: { type: string; status: string }[] };
          }>({
            method: 'GET',
            path: `/apis/apps.vworkspace.io/v1alpha1/namespaces/${TEAM}/applicationinstances/${APP}`,
          });
          return ai.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True');
        },
        120_000,
        500,
      );
      const role = await grantProfile(node.client, 'runCommand.job', TEAM, {
        namespace: NS,
        name: SERVICE_ACCOUNT,
      });
      say(`${TEAM}: RoleBinding ${role} to ${NS}/${SERVICE_ACCOUNT}`);
      await createOperation(node.client, TEAM, 'hello', {
        type: 'RunCommand',
        engine: 'job',
        parameters: { command: ['sh', '-c', 'echo hello from the chart install'] },
      });
      const op = await eventually(
        'the RunCommand finished',
        async () => {
          const o = await getOperation(node.client, TEAM, 'hello');
          return ['Succeeded', 'Failed', 'Cancelled'].includes(o.status?.phase ?? '') ? o : undefined;
        },
        180_000,
        1000,
      );
      const succeeded = op.status?.conditions?.find((c) => c.type === 'Succeeded');
      say(`Operation ${TEAM}/hello: ${op.status?.phase} ${succeeded?.reason}: ${succeeded?.message}`);
      expect({ phase: op.status?.phase, reason: succeeded?.reason }).toEqual({
        phase: 'Succeeded',
        reason: 'JobSucceeded',
      });
      expect(succeeded?.message).toContain('hello from the chart install');
    });

    it('helm uninstall: the operator and its webhooks are gone, the CRDs and the Operations stay', async () => {
      const out = await user(['uninstall', RELEASE, '--namespace', NS, '--wait']);
      say(`  ${out.stdout.trim()}`);
      expect(await exists(`/apis/apps/v1/namespaces/${NS}/deployments/${DEPLOYMENT_NAME}`)).toBe(false);
      for (const kind of ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations'])
        expect(await exists(`/apis/admissionregistration.k8s.io/v1/${kind}/${DEPLOYMENT_NAME}`)).toBe(false);
      for (const name of crdNames) expect(await exists(crdPath(name)), name).toBe(true);
      expect(
        (await node.client.request<Operation>({ method: 'GET', path: opPath(TEAM, 'hello') })).status?.phase,
      ).toBe('Succeeded');
      await eventually(
        'the operator pods gone',
        async () => ((await pods()).length === 0 ? true : undefined),
        120_000,
        1000,
      );
    });
  });
}
