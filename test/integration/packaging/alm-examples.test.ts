// The CSV's alm-examples (the console's "Create" templates) on a real API server with the project's
// CRDs: each example is created in a fresh namespace and must be accepted by the CRD schema and its CEL
// rules. The admission webhook is not registered here, so this is what the API server itself enforces;
// the Operation, CronOperation and WatchOperation get the ApplicationInstance they act on first.
import { ApiException, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { CSV_PATH, readRepoFile } from '../../../hack/bundle.ts';
import { ALL_KINDS, type ResourceId } from '../../../operator/src/api/index.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';

type Obj = Record<string, unknown> & { apiVersion: string; kind: string; metadata: { name: string } };

const csv = YAML.parse(readRepoFile(CSV_PATH)!) as { metadata: { annotations: Record<string, string> } };
const examples = JSON.parse(csv.metadata.annotations['alm-examples']!) as Obj[];

function resourceOf(example: Obj): ResourceId {
  const kind = ALL_KINDS.find(
    (k) => k.resource.kind === example.kind && k.resource.apiVersion === example.apiVersion,
  );
  if (!kind)
    throw new Error(`alm-example of ${example.apiVersion} ${example.kind}, which the project does not own`);
  return kind.resource;
}

let kc: KubeConfig;
let api: CustomObjectsApi;

beforeAll(() => {
  kc = adminKubeConfig();
  api = kc.makeApiClient(CustomObjectsApi);
});

async function create(namespace: string, example: Obj): Promise<Obj> {
  const r = resourceOf(example);
  return (await api.createNamespacedCustomObject({
    group: r.group,
    version: r.version,
    plural: r.plural,
    namespace,
    body: structuredClone(example),
  })) as Obj;
}

/** A namespace holding the ApplicationInstance example, which the other kinds target. */
async function namespaceWithInstance(): Promise<string> {
  const ns = await createNamespace(kc, 'alm');
  const instance = examples.find((e) => e.kind === 'ApplicationInstance');
  if (!instance) throw new Error('alm-examples has no ApplicationInstance');
  await create(ns, instance);
  return ns;
}

describe('alm-examples on the real API server', () => {
  it('has one example per owned kind', () => {
    expect(examples.map((e) => e.kind).sort()).toEqual(ALL_KINDS.map((k) => k.resource.kind).sort());
  });

  for (const example of examples) {
    it(`accepts the ${example.kind} example as written`, async () => {
      const ns =
        example.kind === 'ApplicationInstance'
          ? await createNamespace(kc, 'alm')
          : await namespaceWithInstance();
      const created = await create(ns, example);
      expect(created.metadata).toMatchObject({ name: example.metadata.name, namespace: ns });
      expect(created.spec).toMatchObject(example.spec as Record<string, unknown>);
    });
  }

  it('would catch an example the CRD rejects (an engine that cannot run the type)', async () => {
    const ns = await namespaceWithInstance();
    const op = structuredClone(examples.find((e) => e.kind === 'Operation')!);
    (op.spec as Record<string, unknown>).engine = 'helm';
    const err = await create(ns, op).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiException);
    expect((err as ApiException<unknown>).code).toBe(422);
  });
});
