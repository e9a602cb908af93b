// The operator's Pods, played by host processes. kwok runs no containers, so for each Pod of the
// Deployment OLM created the test does what the kubelet would: it starts `node operator/src/main.ts`
// with the container's environment (downward-API fields resolved for that Pod), the webhook serving
// certificate from the Secret OLM mounts (written to a directory, as the volume would be), and a
// ServiceAccount token from the TokenRequest API bound to the Pod (the projected token), never the
// admin kubeconfig. The process listens for webhook calls on the Pod's IP and containerPort: pod IPs
// are loopback addresses here (world.ts), so the API server's calls through OLM's webhook Service
// reach it. Metrics and probes go to free ports, as several "Pods" share this machine.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isNotFound, type KubeClient, resourcePath } from '@vworkspace/runtime';
import { kubeconfigYaml } from '../../../hack/lib/controlplane.ts';
import { OPERATORS_NAMESPACE } from '../../../hack/lib/olm.ts';
import { tailFile } from '../../../hack/lib/process.ts';
import { eventually } from '../../support/eventually.ts';
import { OperatorProcess } from '../../support/operator-process.ts';
import type { World } from './world.ts';

const CERT_MOUNT = '/tmp/k8s-webhook-server/serving-certs';

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}
interface Container {
  name: string;
  env?: EnvVar[];
  ports?: { name?: string; containerPort: number }[];
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  serviceAccountName?: string;
  containers: Container[];
  volumes?: { name: string; secret?: { secretName: string; items?: { key: string; path: string }[] } }[];
}
interface Deployment {
  metadata: { name: string; generation?: number };
  spec: { replicas?: number; selector: { matchLabels: Record<string, string> }; template: { spec: PodSpec } };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
  };
}
interface Pod {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    deletionTimestamp?: string;
    annotations?: Record<string, string>;
  };
  spec: PodSpec;
  status?: { phase?: string; podIP?: string; conditions?: { type: string; status: string }[] };
}

export interface OperatorPod {
  name: string;
  ip: string;
  /** The Pod's credentials: the ServiceAccount token, as the process uses them. */
  kubeconfigPath: string;
  proc: OperatorProcess;
}

/** The Deployment rolled out: every replica updated, available, and no Pod of an older template left. */
async function rolledOutPods(
  client: KubeClient,
  ns: string,
  name: string,
): Promise<{ d: Deployment; pods: Pod[] }> {
  return eventually(
    `Deployment ${ns}/${name} rolled out with Running pods that have IPs`,
    async () => {
      const d = await client.request<Deployment>({
        method: 'GET',
        path: resourcePath({ group: 'apps', version: 'v1', plural: 'deployments', namespace: ns }, name),
      });
      const want = d.spec.replicas ?? 1;
      const s = d.status ?? {};
      if ((s.observedGeneration ?? 0) < (d.metadata.generation ?? 0)) return undefined;
      if (s.updatedReplicas !== want || s.availableReplicas !== want || s.replicas !== want) return undefined;
      const selector = Object.entries(d.spec.selector.matchLabels)
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
      const pods = (
        await client.request<{ items: Pod[] }>({
          method: 'GET',
          path: resourcePath({ group: '', version: 'v1', plural: 'pods', namespace: ns }),
          query: { labelSelector: selector },
        })
      ).items.filter(
        (p) =>
          !p.metadata.deletionTimestamp &&
          p.status?.phase === 'Running' &&
          p.status.podIP &&
          p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      );
      return pods.length === want ? { d, pods } : undefined;
    },
    180_000,
    500,
  );
}

function resolveEnv(env: EnvVar[] | undefined, pod: Pod): Record<string, string> {
  const out: Record<string, string> = {};
  const fields: Record<string, string | undefined> = {
    'metadata.namespace': pod.metadata.namespace,
    'metadata.name': pod.metadata.name,
    'metadata.uid': pod.metadata.uid,
    'status.podIP': pod.status?.podIP,
    'spec.serviceAccountName': pod.spec.serviceAccountName,
  };
  for (const e of env ?? []) {
    if (e.value !== undefined) out[e.name] = e.value;
    else if (e.valueFrom?.fieldRef) {
      const path = e.valueFrom.fieldRef.fieldPath;
      // metadata.annotations['key']: the kubelet gives an absent annotation as the empty string.
      const annotation = /^metadata\.annotations\['(.+)'\]$/.exec(path)?.[1];
      const v = annotation !== undefined ? (pod.metadata.annotations?.[annotation] ?? '') : fields[path];
      if (v === undefined)
        throw new Error(`env ${e.name}: field ${e.valueFrom.fieldRef.fieldPath} not supported here`);
      out[e.name] = v;
    } else throw new Error(`env ${e.name}: only values and fieldRefs are supported by the e2e pod stand-in`);
  }
  return out;
}

/** The files of a Secret volume, as the kubelet projects them. */
async function writeSecretVolume(
  client: KubeClient,
  ns: string,
  spec: PodSpec,
  mountPath: string,
  dir: string,
) {
  const mount = spec.containers[0]?.volumeMounts?.find((m) => m.mountPath === mountPath);
  const volume = spec.volumes?.find((v) => v.name === mount?.name);
  if (!volume?.secret) throw new Error(`the pod template mounts no Secret at ${mountPath}`);
  // As the kubelet does: a Pod whose Secret does not exist yet waits for it (OLM recreates the
  // service-cert Secret when it replaces a CSV, a moment after the Deployment appears).
  const path = resourcePath(
    { group: '', version: 'v1', plural: 'secrets', namespace: ns },
    volume.secret.secretName,
  );
  let secret: { data?: Record<string, string> } | undefined;
  for (const deadline = Date.now() + 120_000; !secret; ) {
    try {
      secret = await client.request<{ data?: Record<string, string> }>({ method: 'GET', path });
    } catch (err) {
      if (!isNotFound(err) || Date.now() > deadline) throw err;
      await sleep(1000);
    }
  }
  const data = secret.data ?? {};
  const items = volume.secret.items ?? Object.keys(data).map((key) => ({ key, path: key }));
  mkdirSync(dir, { recursive: true });
  for (const { key, path } of items) {
    const value = data[key];
    if (value === undefined) throw new Error(`Secret ${volume.secret.secretName} has no key ${key}`);
    writeFileSync(join(dir, path), Buffer.from(value, 'base64'), { mode: 0o600 });
  }
  return volume.secret.secretName;
}

/** Rejects once one of `pods` is gone or terminating (polled every 2 s); never resolves. */
async function podsDeleted(client: KubeClient, ns: string, pods: Pod[], signal: AbortSignal): Promise<never> {
  for (;;) {
    await sleep(2000, undefined, { signal }).catch(() => undefined);
    if (signal.aborted) return new Promise<never>(() => {});
    for (const pod of pods) {
      const now = await client
        .request<Pod>({
          method: 'GET',
          path: resourcePath({ group: '', version: 'v1', plural: 'pods', namespace: ns }, pod.metadata.name),
        })
        // Not found is the answer; any other failure is no answer (asked again in 2 s).
        .catch((err: unknown) => (isNotFound(err) ? undefined : pod));
      if (signal.aborted) return new Promise<never>(() => {});
      if (!now || now.metadata.uid !== pod.metadata.uid || now.metadata.deletionTimestamp)
        throw new Error(`pod ${pod.metadata.name} was deleted while its process started`);
    }
  }
}

function sameUids(a: Pod[], b: Pod[]): boolean {
  const uids = (ps: Pod[]) =>
    ps
      .map((p) => p.metadata.uid)
      .sort()
      .join(',');
  return uids(a) === uids(b);
}

export class OperatorPods {
  readonly pods: OperatorPod[];
  readonly serviceAccount: string;
  readonly certSecret: string;

  private constructor(pods: OperatorPod[], serviceAccount: string, certSecret: string) {
    this.pods = pods;
    this.serviceAccount = serviceAccount;
    this.certSecret = certSecret;
  }

  static async start(
    world: World,
    opts: { namespace?: string; deployment?: string; label?: string } = {},
  ): Promise<OperatorPods> {
    const ns = opts.namespace ?? OPERATORS_NAMESPACE;
    const deployment = opts.deployment ?? 'vworkspace-operator';
    // OLM may roll the Deployment again right after it looked rolled out (when it replaces a CSV it
    // recreates the service-cert Secret and stamps the new CA's hash on the pod template). The Pods
    // we started for are then deleted, their bound tokens stop authenticating, and a kubelet would be
    // starting the new Pods: so do we, a few times, saying why.
    for (let attempt = 1; ; attempt++) {
      const { pods: found } = await rolledOutPods(world.client, ns, deployment);
      try {
        return await OperatorPods.#startFor(world, ns, found, opts.label ?? 'operator');
      } catch (err) {
        const now = await rolledOutPods(world.client, ns, deployment).catch(() => undefined);
        const same = now && sameUids(now.pods, found);
        if (same || attempt >= 3) throw err;
        world.say(
          `the Deployment's Pods were replaced while their processes started (${found.map((p) => p.metadata.name).join(', ')} → ${now ? now.pods.map((p) => p.metadata.name).join(', ') : 'not rolled out'}): starting the new ones (${String(err).split('\n')[0]})`,
        );
      }
    }
  }

  static async #startFor(world: World, ns: string, found: Pod[], label: string): Promise<OperatorPods> {
    const { client } = world;
    const cluster = world.kc.getCurrentCluster();
    if (!cluster) throw new Error('no current cluster in the admin kubeconfig');
    const caPem = cluster.caData ? Buffer.from(cluster.caData, 'base64') : readFileSync(cluster.caFile ?? '');
    const pods: OperatorPod[] = [];
    let sa = '';
    let certSecret = '';
    // Two Pods on one address cannot both listen: say it as kwok's fault, not the operator's (see
    // pod-ip-pool.ts for how World avoids it).
    const byIp = new Map<string, string>();
    for (const pod of found) {
      const ip = pod.status?.podIP ?? '';
      const other = byIp.get(ip);
      if (other) throw new Error(`kwok gave Pods ${other} and ${pod.metadata.name} the same address ${ip}`);
      byIp.set(ip, pod.metadata.name);
    }
    try {
      for (const pod of found) {
        const dir = join(world.workdir, `${label}-${pod.metadata.name}`);
        mkdirSync(dir, { recursive: true });
        const container = pod.spec.containers.find((c) => c.name === 'manager') ?? pod.spec.containers[0];
        if (!container) throw new Error(`pod ${pod.metadata.name} has no container`);
        certSecret = await writeSecretVolume(client, ns, pod.spec, CERT_MOUNT, join(dir, 'serving-certs'));
        sa = pod.spec.serviceAccountName ?? 'default';
        // What the kubelet mounts as the projected token: a TokenRequest bound to this Pod.
        const tr = await client.request<{ status: { token: string } }>({
          method: 'POST',
          path: resourcePath(
            { group: '', version: 'v1', plural: 'serviceaccounts', namespace: ns },
            sa,
            'token',
          ),
          body: {
            apiVersion: 'authentication.k8s.io/v1',
            kind: 'TokenRequest',
            spec: {
              expirationSeconds: 3600,
              boundObjectRef: {
                apiVersion: 'v1',
                kind: 'Pod',
                name: pod.metadata.name,
                uid: pod.metadata.uid,
              },
            },
          },
        });
        writeFileSync(join(dir, 'ca.crt'), caPem);
        const kubeconfigPath = join(dir, 'kubeconfig');
        writeFileSync(
          kubeconfigPath,
          kubeconfigYaml(
            cluster.server,
            join(dir, 'ca.crt'),
            tr.status.token,
            `system:serviceaccount:${ns}:${sa}`,
          ),
          { mode: 0o600 },
        );
        const env = resolveEnv(container.env, pod);
        const webhookPort = container.ports?.find((p) => p.name === 'webhook-server')?.containerPort;
        if (!webhookPort) throw new Error(`container ${container.name} declares no webhook-server port`);
        const ip = pod.status?.podIP ?? '';
        const proc = await OperatorProcess.start(
          {
            kubeconfigPath,
            namespace: env.OPERATOR_NAMESPACE ?? ns,
            logDir: dir,
            env: {
              ...env,
              WEBHOOK_HOST: ip,
              WEBHOOK_PORT: String(webhookPort),
              WEBHOOK_CERT_DIR: join(dir, 'serving-certs'),
            },
          },
          pod.metadata.name,
        );
        pods.push({ name: pod.metadata.name, ip, kubeconfigPath, proc });
      }
      // A Pod deleted meanwhile (OLM rolled the Deployment again) will never be ready: say so at once
      // rather than after the readiness timeout, and start() starts the new ones.
      const stopWatching = new AbortController();
      try {
        await Promise.race([
          Promise.all(pods.map((p) => p.proc.waitReady(120_000))),
          podsDeleted(client, ns, found, stopWatching.signal),
        ]);
      } finally {
        stopWatching.abort();
      }
      await eventually(
        'one operator process leading',
        async () => (await Promise.all(pods.map((p) => p.proc.isLeader()))).filter(Boolean).length === 1,
        120_000,
        500,
      );
    } catch (err) {
      await Promise.all(pods.map((p) => p.proc.stop()));
      throw err;
    }
    return new OperatorPods(pods, `system:serviceaccount:${ns}:${sa}`, certSecret);
  }

  async leader(): Promise<OperatorPod | undefined> {
    for (const p of this.pods) if (await p.proc.isLeader()) return p;
    return undefined;
  }

  /**
   * Graceful stop (SIGTERM), as when the kubelet deletes the Pods; a process still running 15 s later
   * is killed, and that is reported (a Pod that slow would hold up every rollout).
   */
  async stop(): Promise<string[]> {
    const slow: string[] = [];
    await Promise.all(
      this.pods.map(async (p) => {
        await p.proc.stop();
        const { signal } = await p.proc.exited;
        if (signal === 'SIGKILL')
          slow.push(`${p.name} did not exit within 15 s of SIGTERM (${p.proc.logPath})`);
      }),
    );
    return slow;
  }

  report(lines = 40): string {
    return this.pods
      .map(
        (p) =>
          `--- operator pod ${p.name} (${p.ip}) ${p.proc.logPath} ---\n${tailFile(p.proc.logPath, lines)}`,
      )
      .join('\n');
  }
}

/** A journey's operator Pods (whichever `current` returns): in its failure report, and stopped before the cluster. */
export function reportAndStopPods(world: World, current: () => OperatorPods | undefined): void {
  world.reporters.push(() => current()?.report() ?? '(no operator processes)');
  world.cleanup('operator processes', async () => {
    for (const slow of (await current()?.stop()) ?? []) world.say(`  ${slow}`);
  });
}
