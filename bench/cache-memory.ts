// Heap the informer cache holds per object, for the footprint scenario's objects (issue 26, item 3; the
// figures it reports: docs/performance.md). Not a test: it prints numbers.
//
//   node bench/cache-memory.ts [--objects 20000]
//
// `--objects` ApplicationInstances and as many finished Operations, as the API server returns them in a
// list (metadata with uid, resourceVersion and managedFields; the statuses the operator and the bench
// wrote), are parsed from one list page and stored the way the informer stores them (managedFields made
// lean, frozen): once with their strings as parsed, once through a StringTable (strings.ts). Then both
// indexes the operator keeps one value per object in (Operations by target, instances by release). Each
// figure is the JS heap used after a full GC, divided by the number of objects.

import { parseArgs } from 'node:util';
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  freezeNormalized,
  Indexer,
  keyOf,
  leanManagedFields,
  objectKey,
  StringTable,
} from '@vworkspace/runtime';
import { heapKept } from './lib/heap.ts';
import { instance, runCommand } from './lib/objects.ts';

const { values } = parseArgs({ options: { objects: { type: 'string', default: '20000' } } });
const n = Number(values.objects);

const AT = '2026-11-29T10:53:02Z';
const field = (paths: string[]) => Object.fromEntries(paths.map((p) => [`f:${p}`, {}]));
const stored = (o: Record<string, unknown>, i: number, status: object, fields: object) => ({
  ...o,
  metadata: {
    ...(o.metadata as object),
    creationTimestamp: AT,
    generation: 1,
    resourceVersion: String(300_000 + i),
    uid: crypto.randomUUID(),
    managedFields: [
      {
        apiVersion: o.apiVersion,
        fieldsType: 'FieldsV1',
        fieldsV1: fields,
        manager: 'bench',
        operation: 'Update',
        time: AT,
      },
      {
        apiVersion: o.apiVersion,
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:status': field(Object.keys(status)) },
        manager: 'vworkspace-operator',
        operation: 'Apply',
        subresource: 'status',
        time: AT,
      },
    ],
  },
  status,
});
const condition = (type: string, status: string, reason: string, message: string) => ({
  lastTransitionTime: AT,
  message,
  observedGeneration: 1,
  reason,
  status,
  type,
});

function listPage(): string {
  const items: object[] = [];
  for (let i = 0; i < n; i++) {
    const ns = `fp${i % 1000}`;
    items.push(
      stored(
        instance(`app${i}`, ns),
        i,
        {
          capabilities: [{ engine: 'job', source: 'manual', verb: 'runcommand' }],
          conditions: [
            condition(
              'Ready',
              'False',
              'ReleaseNotFound',
              `No Helm release "app${i}" is recorded in namespace ${ns}`,
            ),
          ],
          observedGeneration: 1,
          operations: [
            {
              last: { name: `done${i}`, phase: 'Succeeded', reason: 'Completed', time: AT },
              type: 'RunCommand',
            },
          ],
        },
        { 'f:spec': field(['appRef', 'release']) },
      ),
      stored(
        runCommand(`done${i}`, ns, `app${i}`),
        n + i,
        {
          attempts: 1,
          conditions: [condition('Succeeded', 'True', 'Completed', 'bench')],
          finishedAt: AT,
          phase: 'Succeeded',
          startedAt: AT,
        },
        { 'f:spec': field(['engine', 'parameters', 'targetRef', 'type']) },
      ),
    );
  }
  return JSON.stringify({ items });
}

function heapPerObject<T>(what: string, count: number, make: () => T): T {
  const { made, bytes } = heapKept(make);
  console.log(`${what}: ${Math.round(bytes / count)} B per object`);
  return made;
}

const page = listPage();
const parse = () => (JSON.parse(page) as { items: KubernetesObject[] }).items;
heapPerObject('cached, strings as parsed', 2 * n, () =>
  parse().map((o) => freezeNormalized(leanManagedFields(o))),
);
const table = new StringTable();
const cached = heapPerObject('cached, short strings shared', 2 * n, () =>
  parse().map((o) => freezeNormalized(leanManagedFields(o), table)),
);
const ops = cached.filter((o) => o.kind === 'Operation');
const ix = new Indexer<KubernetesObject>();
for (const o of ops) ix.set(objectKey(o), o);
heapPerObject('Operations by target (one index)', ops.length, () =>
  ix.addIndexer('target', (o) =>
    keyOf(o.metadata?.namespace, (o as { spec: { targetRef: { name: string } } }).spec.targetRef.name),
  ),
);
process.exit(0);
