// The real engines (issue 13, docs/engines.md): ONE real node for every engine journey, since each
// needs a control plane, containerd, the kubelet and CoreDNS, and several share the object store and
// the storage provisioner. Each journey installs what it needs on first use (hack/lib/engines/), so
// `-t <journey>` runs one alone. The Operation controller runs in this process with the built-in
// templates and the real adapters; the engines' controllers run as pods from images built here. The
// production journey (test/e2e/production/, last) stops that: the operator installed by OLM reconciles.
import { afterAll, beforeAll, describe } from 'vitest';
import { type RealNode, startRealNode } from '../../../hack/lib/real-node.ts';
import { productionJourney } from '../production/production.ts';
import { argoJourney } from './argo.ts';
import { helmJourney } from './helm.ts';
import { snapshotJourney } from './snapshot.ts';
import { veleroJourney } from './velero.ts';
import { volsyncJourney } from './volsync.ts';

describe('real engines on a real node', () => {
  let node: RealNode | undefined;
  const started = Date.now();
  const say = (m: string) =>
    process.stdout.write(`[engines ${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s] ${m}\n`);
  const theNode = () => {
    if (!node) throw new Error('the real node did not start (see the beforeAll error)');
    return node;
  };

  beforeAll(async () => {
    node = await startRealNode({ log: say });
  });
  afterAll(async () => {
    await node?.stop();
  });

  // Journeys, in order (one line each): <engine>Journey(theNode, say);
  helmJourney(theNode, say);
  snapshotJourney(theNode, say);
  veleroJourney(theNode, say);
  argoJourney(theNode, say);
  volsyncJourney(theNode, say);
  // Last: it installs the operator by OLM, which then reconciles every Operation on the node (issue 22).
  productionJourney(theNode, say);
});
