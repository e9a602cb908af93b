// The runtime's runnable example (like controller-runtime's example_test.go), shown in README.md: a
// controller for a Greeting kind that writes status.message from spec.name. It uses only the package's
// public entry points, '@vworkspace/runtime' and '@vworkspace/runtime/testing', and runs against the
// in-memory API server here; against a cluster, the same code takes loadKubeConfig() and a KubeClient.
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  Client,
  controllerFor,
  FakeClock,
  flushMicrotasks,
  InformerFactory,
  type KubeConfigLike,
  Manager,
  type Reconciler,
  type Request,
  RestMapper,
  type Result,
  TerminalError,
} from '@vworkspace/runtime';
import { MemoryApiServer } from '@vworkspace/runtime/testing';
import { expect, it } from 'vitest';

interface Greeting extends KubernetesObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec: { name: string };
  status?: { message?: string };
}
const GREETING = { group: 'example.io', version: 'v1', plural: 'greetings', kind: 'Greeting' };

// A reconciler is a type: its collaborators are fields, reconcile() reads the cache and writes once.
class GreetingReconciler implements Reconciler {
  readonly #client: Client;
  constructor(client: Client) {
    this.#client = client;
  }

  async reconcile(req: Request): Promise<Result> {
    const g = this.#client.get<Greeting>(GREETING, req);
    if (!g) return {}; // deleted: nothing to do
    // Retrying cannot fix an empty name: a terminal error is logged and counted, never requeued.
    if (!g.spec.name) throw new TerminalError('spec.name is empty: set it to the name to greet');
    await this.#client.status().applyIfChanged(g, { message: `Hello, ${g.spec.name}!` });
    return {};
  }
}

it('reconciles a Greeting into its status', async () => {
  const api = new MemoryApiServer(); // against a cluster: new KubeClient(loadKubeConfig())
  const clock = new FakeClock();
  const cache = new InformerFactory({ kc: {} as KubeConfigLike, client: api, clock });
  const mapper = new RestMapper(api);
  mapper.register('example.io/v1', 'Greeting', 'greetings', true);
  const client = new Client({ client: api, mapper, cache, fieldManager: 'greeter' });
  const mgr = new Manager({ leaderElection: false, metricsPort: false, probePort: false, cache });

  controllerFor(mgr, GREETING).withOptions({ clock }).complete(new GreetingReconciler(client));
  const running = mgr.start();

  api.put('greetings', {
    apiVersion: 'example.io/v1',
    kind: 'Greeting',
    metadata: { name: 'world', namespace: 'default' },
    spec: { name: 'world' },
  });
  await clock.advance(0);
  await flushMicrotasks();
  const stored = api.resource<Greeting>('greetings').objects.get('default/world');
  expect(stored?.status?.message).toBe('Hello, world!');

  await mgr.stop();
  await running;
});
