// Helm on a real node (issue 13, docs/engines.md "helm" and "helmHookJob"): the Upgrade's runner pod runs
// the real helm CLI image against the API server through the `kubernetes` Service, as the runner
// ServiceAccount the namespace admin binds, with the chart from a classic chart repository on the node
// address (hack/lib/engines/helm.ts); a Migration runs the chart's real Helm hook Jobs from the release
// record. Each verb is proven by its effect: the release record helm wrote (revision, status, chart
// version) and the ConfigMap the chart renders, read from the API server; what the hook Jobs' pods stored
// in the "database" they migrate (an HTTP key-value store of hack/lib/engines/helm.ts), in order.
// The Operation and ApplicationInstance controllers run in this process with the real adapters; the
// release is installed by the real helm CLI from this process.
import { execFile } from 'node:child_process';
import { createServer, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KubernetesObject } from '@kubernetes/client-node';
import { resourcePath, statusCode } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT } from '../../../hack/lib/controlplane.ts';
import {
  HELM_RUNNER_ROLE,
  type HelmEngine,
  helmRunnerRole,
  installHelm,
  runnerRoleBinding,
  runnerServiceAccount,
  TINY_VERSIONS,
} from '../../../hack/lib/engines/helm.ts';
import { apply, POD_CIDR, type RealNode } from '../../../hack/lib/real-node.ts';
import type { Operation } from '../../../operator/src/api/operation.ts';
import { adapterFor } from '../../../operator/src/engines/index.ts';
import {
  Api,
  cond,
  type RunningController,
  startController,
  startInstanceController,
} from '../../integration/operation/support.ts';
import { createNamespace } from '../../integration/support/kube.ts';
import { eventually } from '../../support/eventually.ts';

const run = promisify(execFile);

/** An HTTP server on `host` that takes every request and answers none until release() (then 201). */
async function holdingServer(host: string) {
  const held: ServerResponse[] = [];
  let requests = 0;
  let released = false;
  const server = createServer((req, res) => {
    requests++;
    req.resume();
    if (released) res.writeHead(201).end();
    else held.push(res);
  });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(0, host, () => ok());
  });
  server.unref();
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    url: `http://${host}:${port}`,
    requests: () => requests,
    release() {
      released = true;
      for (const res of held.splice(0)) res.writeHead(201).end();
    },
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

interface HistoryEntry {
  revision: number;
  status: string;
  chart: string;
  description: string;
}

/** The helm journeys on the node `theNode()` returns once the shared beforeAll has started it. */
export function helmJourney(theNode: () => RealNode, say: (m: string) => void): void {
  describe('helm: Upgrade and Migration on a real node', () => {
    let node: RealNode;
    let api: Api;
    let engine: HelmEngine;
    let operations: RunningController;
    let instances: { stop(): Promise<void> };

    /** The real helm CLI from this process, as an admin installing the chart would run it. */
    const helm = async (args: string[]) => {
      const home = join(ROOT, 'bin/.helm-home');
      const { stdout } = await run(join(BIN, 'helm'), ['--kubeconfig', node.kubeconfigPath, ...args], {
        env: {
          ...process.env,
          HELM_CONFIG_HOME: join(home, 'config'),
          HELM_CACHE_HOME: join(home, 'cache'),
          HELM_DATA_HOME: join(home, 'data'),
        },
      });
      return stdout;
    };
    const history = async (release: string, ns: string) =>
      JSON.parse(await helm(['history', release, '-n', ns, '-o', 'json'])) as HistoryEntry[];
    const configMap = (ns: string, name: string) =>
      api.client.request<KubernetesObject & { data?: Record<string, string> }>({
        method: 'GET',
        path: resourcePath({ group: '', version: 'v1', plural: 'configmaps', namespace: ns }, name),
      });

    /** A namespace as its admin prepares it: the runner ServiceAccount and its least RBAC for helm. */
    async function namespaceWithRunner(prefix: string): Promise<string> {
      const ns = await createNamespace(node.kc, prefix);
      for (const o of [
        runnerServiceAccount(ns),
        helmRunnerRole(ns, [{ apiGroup: '', resource: 'configmaps' }]),
        runnerRoleBinding(ns, HELM_RUNNER_ROLE),
      ])
        await apply(api.client, o);
      return ns;
    }

    /** Installs tiny from the chart repository and describes it with an ApplicationInstance; waits for Ready. */
    async function installRelease(
      ns: string,
      release: string,
      verb: string,
      engineName: string,
      set: string[] = [],
    ) {
      const version = TINY_VERSIONS.a.version;
      await helm([
        'install',
        release,
        'tiny',
        '--repo',
        engine.repoUrl,
        '--version',
        version,
        '-n',
        ns,
        ...set.flatMap((s) => ['--set', s]),
      ]);
      await api.client.request({
        method: 'POST',
        path: api.instancePath(ns),
        body: {
          apiVersion: 'apps.vworkspace.io/v1alpha1',
          kind: 'ApplicationInstance',
          metadata: { name: release, annotations: { [`ops.vworkspace.io/${verb}`]: engineName } },
          spec: {
            appRef: {
              catalogId: 'tiny',
              chart: { sourceType: 'helm', url: engine.repoUrl, name: 'tiny', version },
            },
            release: { name: release },
          },
        },
      });
      await eventually(
        `ApplicationInstance ${ns}/${release} Ready`,
        async () => {
          const i = await api.client.request<{
            status?: { conditions?: { type: string; status: string }[] };
          }>({
            method: 'GET',
            path: api.instancePath(ns, release),
          });
          return i.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
        },
        60_000,
        500,
      );
    }

    const finished = (ns: string, name: string, timeoutMs = 240_000) => api.finished(ns, name, timeoutMs);
    /** An Upgrade Operation of release shop to `version`, with `values` on top. */
    const upgradeTo = (ns: string, name: string, version: string, values?: Record<string, unknown>) =>
      api.createOperation(ns, name, {
        type: 'Upgrade',
        engine: 'helm',
        targetRef: { name: 'shop' },
        parameters: { version, ...(values ? { values } : {}) },
      });
    const explain = (op: Operation) => JSON.stringify(op.status?.conditions);

    beforeAll(async () => {
      node = theNode();
      api = new Api(node.kc);
      engine = await installHelm(node, say);
      operations = startController(node.kc, adapterFor, { helmImage: engine.helmImage });
      instances = startInstanceController(node.kc);
    });

    afterAll(async () => {
      await operations?.stop();
      await instances?.stop();
      await engine?.stop();
    });

    describe('Upgrade (engine helm)', () => {
      let ns: string;
      beforeAll(async () => {
        ns = await namespaceWithRunner('helm-up');
        await installRelease(ns, 'shop', 'upgrade', 'helm');
        say(`helm: shop ${TINY_VERSIONS.a.version} installed in ${ns}`);
      });

      it('upgrades to B with new values: revision 2 deployed, chart B, the ConfigMap has the new value', async () => {
        await upgradeTo(ns, 'to-b', TINY_VERSIONS.b.version, { message: 'hello from B' });
        const op = await finished(ns, 'to-b');
        expect(op.status?.phase, explain(op)).toBe('Succeeded');
        expect(cond(op, 'Succeeded')).toMatchObject({ status: 'True', reason: 'HelmUpgradeSucceeded' });
        expect(cond(op, 'Succeeded')?.message).toContain('container helm of pod');
        expect(cond(op, 'Succeeded')?.message).toContain('exited with code 0 (Completed)');
        // The effect, as helm recorded it and as the API server holds it.
        const h = await history('shop', ns);
        expect(h.at(-1)).toMatchObject({
          revision: 2,
          status: 'deployed',
          chart: `tiny-${TINY_VERSIONS.b.version}`,
        });
        expect((await configMap(ns, 'shop-config')).data?.message).toBe('hello from B');
        // The runner pod fetched chart B from the repository (a pod address, not this host's).
        const pod = POD_CIDR.replace(/\.0\/24$/, '.');
        expect(engine.served).toContainEqual(
          expect.objectContaining({
            path: `/tiny-${TINY_VERSIONS.b.version}.tgz`,
            status: 200,
            from: expect.stringContaining(pod),
          }),
        );
        // The instance follows the record.
        await eventually('the instance reports revision 2', async () => {
          const i = await api.client.request<{
            status?: { release?: { revision?: number; chartVersion?: string } };
          }>({
            method: 'GET',
            path: api.instancePath(ns, 'shop'),
          });
          return (
            i.status?.release?.revision === 2 && i.status.release.chartVersion === TINY_VERSIONS.b.version
          );
        });
      });

      it("a failing upgrade with --atomic is rolled back: Failed/HelmUpgradeFailed with helm's message, the old values in effect", async () => {
        await upgradeTo(ns, 'to-broken', TINY_VERSIONS.broken.version);
        const op = await finished(ns, 'to-broken');
        expect(op.status?.phase, explain(op)).toBe('Failed');
        const c = cond(op, 'Succeeded');
        say(`helm: ${c?.reason}: ${c?.message}`);
        expect(c).toMatchObject({ status: 'False', reason: 'HelmUpgradeFailed' });
        expect(c?.message).toContain('container helm of pod');
        expect(c?.message).toMatch(/exited with code 1 \(Error\); last log lines: .*UPGRADE FAILED/);
        expect(c?.message).toContain('rolled back due to atomic being set');
        const h = await history('shop', ns);
        say(
          `helm: history after the failed upgrade: ${JSON.stringify(h.map((e) => [e.revision, e.status, e.chart, e.description]))}`,
        );
        const failedRev = h.find((e) => e.chart === `tiny-${TINY_VERSIONS.broken.version}`);
        expect(failedRev).toMatchObject({ revision: 3, status: 'failed' });
        expect(h.at(-1)).toMatchObject({
          revision: 4,
          status: 'deployed',
          chart: `tiny-${TINY_VERSIONS.b.version}`,
          description: 'Rollback to 2',
        });
        expect((await configMap(ns, 'shop-config')).data?.message).toBe('hello from B');
        // --reset-then-reuse-values: the failed revision had the release's own value on 1.2.0's new
        // defaults (its `broken: true` is what failed; --reuse-values would have kept 1.1.0's defaults).
        const values = JSON.parse(
          await helm(['get', 'values', 'shop', '--revision', '3', '-n', ns, '-o', 'json']),
        );
        expect(values).toEqual({ message: 'hello from B' });
      });
    });

    describe('a stopped Upgrade never leaves the release pending', () => {
      // The chart's pre-upgrade hook posts to `migration.store`; this server takes the request and holds it
      // until released, so helm waits in the middle of the upgrade (revision 2 pending-upgrade).
      let hold: { url: string; requests: () => number; release: () => void; close: () => Promise<void> };
      beforeAll(async () => {
        hold = await holdingServer(node.nodeIp);
      });
      afterAll(async () => {
        hold?.release();
        await hold?.close();
      });

      /** A namespace whose runner may also run the chart's hook Jobs, with tiny A (revision 1) installed. */
      async function releaseToStop(prefix: string): Promise<string> {
        const ns = await namespaceWithRunner(prefix);
        for (const o of [
          helmRunnerRole(ns, [{ apiGroup: 'batch', resource: 'jobs' }], 'helm-hooks'),
          runnerRoleBinding(ns, 'helm-hooks'),
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'Role',
            metadata: { name: 'helm-hooks-watch', namespace: ns },
            rules: [{ apiGroups: ['batch'], resources: ['jobs'], verbs: ['list', 'watch'] }],
          },
          runnerRoleBinding(ns, 'helm-hooks-watch'),
        ])
          await apply(api.client, o);
        await installRelease(ns, 'shop', 'upgrade', 'helm');
        return ns;
      }

      /** The Job (and so its pods: foreground deletion) is gone. */
      async function expectNoJob(ns: string, name: string): Promise<void> {
        const status = await api.client
          .request({ method: 'GET', path: `/apis/batch/v1/namespaces/${ns}/jobs/${name}` })
          .then(
            () => 200,
            (err: unknown) => statusCode(err),
          );
        expect(status, `Job ${ns}/${name}`).toBe(404);
      }

      /** An Upgrade to B whose pre-upgrade hook is held: returns once helm waits on it, release pending. */
      async function heldUpgrade(ns: string, name: string): Promise<void> {
        const before = hold.requests();
        await upgradeTo(ns, name, TINY_VERSIONS.b.version, { migration: { enabled: true, store: hold.url } });
        await eventually(
          'helm waiting on the held hook, the release pending-upgrade',
          async () =>
            hold.requests() > before && (await history('shop', ns)).at(-1)?.status === 'pending-upgrade',
          180_000,
          500,
        );
      }

      it("helm killed mid-upgrade (SIGKILL): the Upgrade's rollback Job puts the release back; Failed/HelmUpgradeFailed says so", async () => {
        const ns = await releaseToStop('helm-kill');
        await heldUpgrade(ns, 'to-b');
        const [pid] = node.podProcesses(
          (argv) =>
            argv.some((a) => a.endsWith('helm')) &&
            argv.includes('upgrade') &&
            argv.includes(`--namespace=${ns}`),
        );
        expect(pid, 'the runner pod runs helm upgrade').toBeDefined();
        process.kill(pid!, 'SIGKILL');
        const op = await finished(ns, 'to-b');
        expect(op.status?.phase, explain(op)).toBe('Failed');
        const c = cond(op, 'Succeeded');
        say(`helm: ${c?.reason}: ${c?.message}`);
        expect(c).toMatchObject({ status: 'False', reason: 'HelmUpgradeFailed' });
        expect(c?.message).toMatch(/exited with code 137/);
        expect(c?.message).toMatch(
          /the release is deployed \(revision 3; Job \S+ rolled it back to revision 1\); the operator stopped the chart's hook Job shop-prepare, which helm had started for the abandoned upgrade$/,
        );
        await expectNoJob(ns, 'shop-prepare');
        const h = await history('shop', ns);
        say(
          `helm: history after the kill: ${JSON.stringify(h.map((e) => [e.revision, e.status, e.description]))}`,
        );
        expect(h.at(-1)).toMatchObject({
          revision: 3,
          status: 'deployed',
          chart: `tiny-${TINY_VERSIONS.a.version}`,
          description: 'Rollback to 1',
        });
        // The killed revision keeps the status helm left it in (helm rollback supersedes only deployed
        // ones); the release's status is its newest revision's, and the next Upgrade is not refused.
        expect(h.find((e) => e.revision === 2)?.status).toBe('pending-upgrade');
        await upgradeTo(ns, 'to-b-again', TINY_VERSIONS.b.version);
        const next = await finished(ns, 'to-b-again');
        expect(next.status?.phase, explain(next)).toBe('Succeeded');
      });
    });

    describe('Migration (engine helmHookJob)', () => {
      const migrating = (schema: number, fail = false) => [
        'migration.enabled=true',
        `migration.store=${engine.storeUrl}`,
        `migration.schema=${schema}`,
        ...(fail ? ['migration.fail=true'] : []),
      ];
      const stored = (ns: string, key: string) => engine.state.get(`${ns}/db/${key}`);

      it("runs the release's pre-upgrade hook Jobs in hook-weight order: Succeeded, their effect is there", async () => {
        const ns = await namespaceWithRunner('helm-mig');
        await installRelease(ns, 'db', 'migration', 'helmHookJob', migrating(7));
        // helm install does not run pre-upgrade hooks: nothing has been migrated yet.
        expect(stored(ns, 'prepared')).toBeUndefined();
        await api.createOperation(ns, 'migrate', {
          type: 'Migration',
          engine: 'helmHookJob',
          targetRef: { name: 'db' },
        });
        const op = await finished(ns, 'migrate');
        expect(op.status?.phase, explain(op)).toBe('Succeeded');
        const c = cond(op, 'Succeeded');
        expect(c).toMatchObject({ status: 'True', reason: 'HelmHookJobSucceeded' });
        expect(c?.message).toContain('2 hook Jobs completed in order');
        expect(c?.message).toMatch(
          /container migrate of pod \S+ exited with code 0 \(Completed\); last log lines: migrating db to schema 7 \| migrated db to schema 7$/,
        );
        const jobs = String(op.status?.outputs?.jobNames ?? '').split(',');
        expect(jobs).toHaveLength(2);
        // The effect: "migrate" found what "prepare" stored (it fails otherwise), then stored the
        // rendered migration.schema; both really ran in pods.
        expect(stored(ns, 'prepared')).toBe('schema 7');
        expect(stored(ns, 'schema')).toBe('7');
        const pod = POD_CIDR.replace(/\.0\/24$/, '.');
        expect(engine.served.filter((r) => r.path.startsWith(`/state/${ns}/`))).toEqual([
          { path: `/state/${ns}/db/prepared`, status: 201, from: expect.stringContaining(pod) },
          { path: `/state/${ns}/db/prepared`, status: 200, from: expect.stringContaining(pod) },
          { path: `/state/${ns}/db/schema`, status: 201, from: expect.stringContaining(pod) },
        ]);
        // Run from the release record, as rendered (values applied), then the operator's own Jobs.
        const [first, second] = await Promise.all(
          jobs.map((j) =>
            api.client.request<KubernetesObject & { metadata: { annotations?: Record<string, string> } }>({
              method: 'GET',
              path: resourcePath({ group: 'batch', version: 'v1', plural: 'jobs', namespace: ns }, j),
            }),
          ),
        );
        expect(first?.metadata.annotations).toMatchObject({
          'ops.vworkspace.io/helm-hook': 'db-prepare',
          'ops.vworkspace.io/helm-hook-step': '1/2',
        });
        expect(second?.metadata.annotations).toMatchObject({
          'ops.vworkspace.io/helm-hook': 'db-migrate',
          'ops.vworkspace.io/helm-hook-step': '2/2',
        });
      });

      it('a failing hook: Failed/HelmHookJobFailed with its exit code and log tail; what it would store is not there', async () => {
        const ns = await namespaceWithRunner('helm-migf');
        await installRelease(ns, 'db', 'migration', 'helmHookJob', migrating(8, true));
        await api.createOperation(ns, 'migrate', {
          type: 'Migration',
          engine: 'helmHookJob',
          targetRef: { name: 'db' },
        });
        const op = await finished(ns, 'migrate');
        expect(op.status?.phase, explain(op)).toBe('Failed');
        const c = cond(op, 'Succeeded');
        say(`helm: ${c?.reason}: ${c?.message}`);
        expect(c).toMatchObject({ status: 'False', reason: 'HelmHookJobFailed' });
        expect(c?.message).toContain('migration hook 2/2 db-migrate');
        expect(c?.message).toMatch(
          /container migrate of pod \S+ exited with code 4 \(Error\); last log lines: migrating db to schema 8 \| schema 8: column users.email already exists/,
        );
        expect(stored(ns, 'prepared')).toBe('schema 8');
        expect(stored(ns, 'schema')).toBeUndefined();
      });
    });
  });
}
