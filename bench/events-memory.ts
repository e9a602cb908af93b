// Heap held by the Event recorder's background queue per waiting write (issue 26, item 3; the figure it
// reports: docs/performance.md). Not a test: it prints numbers.
//
//   node bench/events-memory.ts [--events 10000]
//
// A recorder as the operator runs it (background, trailing a foreground that never pauses) on a client
// whose writes never finish, so every Event but the first waits: the JS heap used after a full GC,
// before and after `--events` Events about distinct Operations, divided by their number.

import { parseArgs } from 'node:util';
import { Activity, EventRecorder, type KubeClient } from '@vworkspace/runtime';
import { heapKept } from './lib/heap.ts';

const { values } = parseArgs({ options: { events: { type: 'string', default: '10000' } } });
const n = Number(values.events);

const client: KubeClient = { request: () => new Promise(() => {}) };
const activity = new Activity({ quietMs: 1_000 });
const busy = setInterval(() => activity.touch(), 100);
activity.touch();
const recorder = new EventRecorder({
  client,
  background: true,
  maxPending: n + 1,
  trail: { activity, maxMs: 3_600_000 },
});
const { bytes } = heapKept(() => {
  for (let i = 0; i < n; i++) {
    const name = `backup-${i.toString(36).padStart(6, '0')}`;
    const operation = {
      apiVersion: 'ops.vworkspace.io/v1alpha1',
      kind: 'Operation',
      metadata: { name, namespace: `tenant-${i % 1000}`, uid: crypto.randomUUID() },
    };
    void recorder.event(
      operation,
      'Normal',
      'Succeeded',
      `Backup ${name} of app-${i} succeeded through the Job engine`,
    );
  }
});
clearInterval(busy);
console.log(
  `${recorder.pending} Events waiting: heap +${(bytes / 2 ** 20).toFixed(1)} MiB, ` +
    `${Math.round(bytes / n)} B per waiting write`,
);
process.exit(0);
