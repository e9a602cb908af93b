// The real-node journeys (docs/real-node.md): ONE real node for all of them, since starting one costs
// a control plane, containerd, the kubelet and CoreDNS. RunCommand first (the Operation controller in
// this process), then the install without OLM (the Helm chart, installed and uninstalled), then OLM (the
// engines' APIs without a provider in the catalog, then the operator installed as a pod).
import { afterAll, beforeAll, describe } from 'vitest';
import { type RealNode, startRealNode } from '../../../hack/lib/real-node.ts';
import { chartJourney } from './chart.ts';
import { olmJourney } from './olm.ts';
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
    await node?.stop();
  });

  runCommandJourney(theNode);
  chartJourney(theNode, say);
  olmJourney(theNode, say);
});
