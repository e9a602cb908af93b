// OLM on the real node, shared by every journey that installs through it (the OLM journey's two parts and
// the production journey, real-node.test.ts): OLM's two operators as host processes, and the images
// they install from, built once per node by the project's image code (olm-images.ts). The catalog
// operator dials CatalogSource pods by Service name, so it resolves through the node's CoreDNS (reached
// through kube-proxy like any ClusterIP). Operators run in a namespace that enforces the restricted Pod
// Security Standard. Started on first use (so `-t <journey>` runs one journey alone), stopped by
// stopOlmOnNode before the node stops; its files live in the node's directory, which the node's cleanup
// removes.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PATCH_TYPES } from '@vworkspace/runtime';
import { perNode } from '../../../hack/lib/engines/workloads.ts';
import { type Olm, OPERATORS_NAMESPACE, startOlm } from '../../../hack/lib/olm.ts';
import { DNS_IP, type RealNode } from '../../../hack/lib/real-node.ts';
import { olmReport } from '../support/olm-api.ts';
import { buildOlmImages, type OlmImages } from './olm-images.ts';

/** The version the catalog is first cut back to: the OLM journey installs it, then upgrades. */
export const OLDER = '0.0.9';

export interface NodeOlm {
  olm: Olm;
  images: OlmImages;
  /** Subscriptions, InstallPlans, CSVs and OLM's last log lines, for a failure report. */
  report(): Promise<string>;
}

const startOnce = perNode(start);
/** The nodes' running OLM, for stopOlmOnNode. */
const running = new WeakMap<RealNode, NodeOlm>();

/** OLM and its images on `node`, started by the first caller; a failed start is forgotten. */
export function olmOnNode(node: RealNode, say: (line: string) => void): Promise<NodeOlm> {
  return startOnce(node, say);
}

/** Stops OLM's operators on `node` if a journey started them. */
export async function stopOlmOnNode(node: RealNode): Promise<void> {
  await running.get(node)?.olm.stop();
  running.delete(node);
}

async function start(node: RealNode, say: (line: string) => void): Promise<NodeOlm> {
  const workdir = join(node.workdir, 'olm');
  await mkdir(workdir, { recursive: true });
  say('building the operator, helm runner, bundle and catalog images for the node registry ...');
  const images = buildOlmImages(node, workdir, OLDER, say);
  say(`catalog up to ${OLDER}: ${images.catalogUpTo}; full: ${images.catalogFull}`);
  const resolvConf = join(workdir, 'resolv.conf');
  await writeFile(resolvConf, `nameserver ${DNS_IP}\nsearch cluster.local\noptions ndots:5\n`);
  const olm = await startOlm(node.kubeconfigPath, node.client, workdir, {
    // Unpack Jobs run util and bundle images with no user of their own (the bundle is FROM scratch):
    // OLM's default workload uid (1001) lets them start under runAsNonRoot.
    catalogArgs: [
      '--set-workload-user-id=true',
      '--util-image',
      node.images.olmUtil,
      '--opmImage',
      images.catalogFull,
    ],
    resolvConf,
  });
  try {
    await node.client.request({
      method: 'PATCH',
      path: `/api/v1/namespaces/${OPERATORS_NAMESPACE}`,
      contentType: PATCH_TYPES.merge,
      body: { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } },
    });
  } catch (err) {
    await olm.stop();
    throw err;
  }
  const started: NodeOlm = {
    olm,
    images,
    report: async () => `${await olmReport(node.client).catch(() => '')}\n${olm.logs(30)}`,
  };
  running.set(node, started);
  return started;
}
