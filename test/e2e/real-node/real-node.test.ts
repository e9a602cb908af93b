// Every journey on a real node (docs/real-node.md, docs/engines.md, docs/production.md): ONE node for all
// of them, since starting one costs a control plane, containerd, the kubelet and CoreDNS (ADR 0048).
// killed-run.test.ts starts a node of its own, before or after this file (the node lock).
//
// In order: RunCommand (the Operation controller in this process), the install without OLM (the Helm
// chart, installed and uninstalled), OLM's resolution of the engines' APIs without a provider (nothing
// installed). Then the real engines, once their tools are built (hack/test.sh builds them in the background
// on a cold machine): each engine journey installs what it needs on first use (hack/lib/engines/), the
// Operation controller in this process with the built-in templates and the real adapters. Then OLM
// installs the operator from the catalog image and upgrades it, and from there the production journey's
// every Operation is reconciled by that pod (no controller in this process any more: two would race).
// `-t <describe name>` runs one journey alone; each installs what it needs.
import { afterAll, beforeAll, describe } from 'vitest';
import { ENGINES_BUILD_WAIT_MS, enginesBuilt } from '../../../hack/lib/engines/built.ts';
import { type RealNode, startRealNode } from '../../../hack/lib/real-node.ts';
import { argoJourney } from '../engines/argo.ts';
import { helmJourney } from '../engines/helm.ts';
import { snapshotJourney } from '../engines/snapshot.ts';
import { veleroJourney } from '../engines/velero.ts';
import { volsyncJourney } from '../engines/volsync.ts';
import { productionJourney } from '../production/production.ts';
import { chartJourney } from './chart.ts';
import { olmDependenciesJourney, olmInstallJourney } from './olm.ts';
import { stopOlmOnNode } from './olm-on-node.ts';
import { runCommandJourney } from './run-command.ts';

describe('a real node', () => {
  let node: RealNode | undefined;
  const started = Date.now();
  const say = (m: string) =>
    process.stdout.write(`[real-node ${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s] ${m}\n`);
  const theNode = () => {
    if (!node) throw new Error('the real node did not start (see the beforeAll error)');
    return node;
  };

  beforeAll(async () => {
    node = await startRealNode({ log: say });
  });
  afterAll(async () => {
    if (node) await stopOlmOnNode(node);
    await node?.stop();
  });

  runCommandJourney(theNode);
  chartJourney(theNode, say);
  olmDependenciesJourney(theNode, say);

  describe('real engines on a real node', () => {
    beforeAll(() => enginesBuilt(say), ENGINES_BUILD_WAIT_MS);

    // Journeys, in order (one line each): <engine>Journey(theNode, say);
    helmJourney(theNode, say);
    snapshotJourney(theNode, say);
    veleroJourney(theNode, say);
    argoJourney(theNode, say);
    volsyncJourney(theNode, say);
    // The operator installed by OLM, then reconciling every Operation on the node (issue 22).
    olmInstallJourney(theNode, say);
    productionJourney(theNode, say);
  });
});
