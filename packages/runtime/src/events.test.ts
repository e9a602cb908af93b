import { describe, expect, it } from 'vitest';
import { Activity } from './activity.ts';
import { FakeClock } from './clock.ts';
import { EventRecorder } from './events.ts';
import { KubeApiError, type KubeClient, type KubeRequest } from './kube-client.ts';

function fakeClient(fail?: (req: KubeRequest) => unknown): { client: KubeClient; reqs: KubeRequest[] } {
  const reqs: KubeRequest[] = [];
  return {
    reqs,
    client: {
      async request<T>(req: KubeRequest): Promise<T> {
        reqs.push(req);
        const err = fail?.(req);
        if (err) throw err;
        return {} as T;
      },
    },
  };
}

const op = {
  apiVersion: 'ops.vworkspace.io/v1alpha1',
  kind: 'Operation',
  metadata: { name: 'backup-1', namespace: 'team', uid: 'u-1', resourceVersion: '9' },
};

function setup(fail?: (req: KubeRequest) => unknown) {
  const clock = new FakeClock(Date.UTC(2025, 0, 1));
  const { client, reqs } = fakeClient(fail);
  const rec = new EventRecorder({ client, clock, reportingInstance: 'vworkspace-operator-pod-1' });
  return { clock, reqs, rec };
}

describe('EventRecorder', () => {
  it('creates an events.k8s.io/v1 Event regarding the object, reported by vworkspace-operator', async () => {
    const { reqs, rec } = setup();
    await rec.event(op, 'Normal', 'TemplateValidated', 'template velero-backup accepted', {
      action: 'Validate',
    });
    expect(reqs).toHaveLength(1);
    expect(reqs[0]).toMatchObject({
      method: 'POST',
      path: '/apis/events.k8s.io/v1/namespaces/team/events',
      body: {
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { namespace: 'team', name: expect.stringMatching(/^backup-1\.[0-9a-f]+$/) },
        eventTime: '2025-01-01T00:00:00.000000Z',
        reportingController: 'vworkspace-operator',
        reportingInstance: 'vworkspace-operator-pod-1',
        action: 'Validate',
        type: 'Normal',
        reason: 'TemplateValidated',
        note: 'template velero-backup accepted',
        regarding: {
          apiVersion: 'ops.vworkspace.io/v1alpha1',
          kind: 'Operation',
          name: 'backup-1',
          namespace: 'team',
          uid: 'u-1',
        },
      },
    });
  });

  it('turns repeats into a series on the same Event instead of new Events', async () => {
    const { clock, reqs, rec } = setup();
    await rec.event(op, 'Warning', 'TargetNotReady', 'waiting for app');
    clock.advanceSync(1000);
    // A new resourceVersion of the same object is still the same series.
    await rec.event(
      { ...op, metadata: { ...op.metadata, resourceVersion: '10' } },
      'Warning',
      'TargetNotReady',
      'waiting for app',
    );
    clock.advanceSync(1000);
    await rec.event(op, 'Warning', 'TargetNotReady', 'waiting for app');
    const name = (reqs[0]!.body as { metadata: { name: string } }).metadata.name;
    expect(reqs.map((r) => r.method)).toEqual(['POST', 'PATCH', 'PATCH']);
    expect(reqs[1]).toMatchObject({
      path: `/apis/events.k8s.io/v1/namespaces/team/events/${name}`,
      contentType: 'application/merge-patch+json',
      body: { series: { count: 2, lastObservedTime: '2025-01-01T00:00:01.000000Z' } },
    });
    expect(reqs[2]!.body).toEqual({ series: { count: 3, lastObservedTime: '2025-01-01T00:00:02.000000Z' } });
  });

  it('different notes, reasons or objects are different events; the window expires series', async () => {
    const { clock, reqs, rec } = setup();
    await rec.event(op, 'Normal', 'A', 'one');
    await rec.event(op, 'Normal', 'A', 'two');
    await rec.event(op, 'Normal', 'B', 'one');
    await rec.event({ ...op, metadata: { ...op.metadata, name: 'other' } }, 'Normal', 'A', 'one');
    clock.advanceSync(11 * 60_000);
    await rec.event(op, 'Normal', 'A', 'one');
    expect(reqs.map((r) => r.method)).toEqual(['POST', 'POST', 'POST', 'POST', 'POST']);
  });

  it('starts a new Event when the series Event has expired (404 on the patch)', async () => {
    const { reqs, rec } = setup((req) =>
      req.method === 'PATCH' ? new KubeApiError(404, 'NotFound', 'gone', undefined) : undefined,
    );
    await rec.event(op, 'Normal', 'A', 'one');
    await rec.event(op, 'Normal', 'A', 'one');
    expect(reqs.map((r) => r.method)).toEqual(['POST', 'PATCH', 'POST']);
    const names = reqs
      .filter((r) => r.method === 'POST')
      .map((r) => (r.body as { metadata: { name: string } }).metadata.name);
    expect(new Set(names).size).toBe(2);
  });

  it('never rejects when the API server fails, truncates notes, and files cluster-scoped objects under default', async () => {
    const { reqs, rec } = setup(() => new KubeApiError(500, 'InternalError', 'down', undefined));
    await expect(
      rec.event(
        { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } },
        'Warning',
        'X',
        'é'.repeat(2000),
      ),
    ).resolves.toBeUndefined();
    const body = reqs[0]!.body as { note: string; metadata: { namespace: string } };
    expect(Buffer.byteLength(body.note)).toBeLessThanOrEqual(1024);
    expect(body.note.endsWith('...')).toBe(true);
    expect(body.metadata.namespace).toBe('default');
  });
});

describe('EventRecorder in the background', () => {
  /** A client whose writes stay in flight until their gate is opened, oldest first. */
  function gatedClient() {
    const gates: (() => void)[] = [];
    const reqs: KubeRequest[] = [];
    const client: KubeClient = {
      request<T>(req: KubeRequest): Promise<T> {
        reqs.push(req);
        return new Promise<T>((ok) => gates.push(() => ok({} as T)));
      },
    };
    const openNext = async () => {
      gates.shift()?.();
      await new Promise((r) => setImmediate(r));
    };
    const reasons = () => reqs.map((r) => (r.body as { reason: string }).reason);
    return { client, reqs, openNext, reasons, inFlight: () => gates.length };
  }
  const named = (name: string) => ({ ...op, metadata: { ...op.metadata, name } });

  it('resolves before the write and writes one Event at a time, in the order recorded', async () => {
    const c = gatedClient();
    const rec = new EventRecorder({ client: c.client, background: true });
    await rec.event(named('a'), 'Normal', 'One', 'first');
    await rec.event(named('b'), 'Normal', 'Two', 'second');
    await rec.event(named('c'), 'Warning', 'Three', 'third');
    expect(rec.pending).toBe(3);
    expect(c.reasons()).toEqual(['One']);
    await c.openNext();
    expect(c.reasons()).toEqual(['One', 'Two']);
    expect(c.inFlight()).toBe(1);
    await c.openNext();
    await c.openNext();
    expect(c.reasons()).toEqual(['One', 'Two', 'Three']);
    expect(rec.pending).toBe(0);
  });

  it('keeps `concurrency` writes in flight when asked', async () => {
    const c = gatedClient();
    const rec = new EventRecorder({ client: c.client, background: true, concurrency: 2 });
    for (const n of ['a', 'b', 'c']) await rec.event(named(n), 'Normal', n, n);
    expect(c.inFlight()).toBe(2);
    await c.openNext();
    expect(c.reasons()).toEqual(['a', 'b', 'c']);
    expect(c.inFlight()).toBe(2);
  });

  it('with more than one write in flight, a series still writes in order: its bump waits for its create', async () => {
    const c = gatedClient();
    const rec = new EventRecorder({ client: c.client, background: true, concurrency: 2 });
    await rec.event(op, 'Normal', 'Again', 'same');
    await rec.event(op, 'Normal', 'Again', 'same');
    expect(c.reqs.map((r) => r.method)).toEqual(['POST']);
    await c.openNext();
    expect(c.reqs.map((r) => r.method)).toEqual(['POST', 'PATCH']);
    await c.openNext();
    expect(rec.pending).toBe(0);
  });

  it('a failed write frees its slot for the next', async () => {
    let calls = 0;
    const reqs: KubeRequest[] = [];
    const client: KubeClient = {
      async request<T>(req: KubeRequest): Promise<T> {
        reqs.push(req);
        if (calls++ === 0) throw new KubeApiError(500, 'InternalError', 'etcd timeout', undefined);
        return {} as T;
      },
    };
    const rec = new EventRecorder({ client, background: true });
    await rec.event(named('a'), 'Normal', 'Fails', 'x');
    await rec.event(named('b'), 'Normal', 'Written', 'y');
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(reqs.map((r) => (r.body as { reason: string }).reason)).toEqual(['Fails', 'Written']);
    expect(rec.pending).toBe(0);
  });

  it('trail: writes wait for a lull of the foreground, at most maxMs after they were recorded', async () => {
    const clock = new FakeClock();
    const activity = new Activity({ quietMs: 1_000, clock });
    const written: [string, number][] = [];
    const client: KubeClient = {
      async request<T>(req: KubeRequest): Promise<T> {
        written.push([(req.body as { reason: string }).reason, clock.now()]);
        return {} as T;
      },
    };
    const rec = new EventRecorder({ client, clock, background: true, trail: { activity, maxMs: 4_000 } });
    const start = clock.now();
    activity.touch();
    await rec.event(named('a'), 'Normal', 'InTheBurst', 'x');
    await clock.advance(500);
    activity.touch();
    await clock.advance(999);
    expect(written).toEqual([]);
    await clock.advance(1);
    expect(written).toEqual([['InTheBurst', start + 1_500]]);
    // A foreground that never pauses: the write goes maxMs after it was recorded.
    const busy = clock.now();
    activity.touch();
    await rec.event(named('b'), 'Normal', 'Busy', 'y');
    for (let i = 0; i < 12; i++) {
      activity.touch();
      await clock.advance(500);
    }
    expect(written.slice(1)).toEqual([['Busy', busy + 4_000]]);
    expect(rec.pending).toBe(0);
  });

  it('trail: past half the queue the writes stop waiting, so a long burst drops nothing more', async () => {
    const clock = new FakeClock();
    const activity = new Activity({ quietMs: 1_000, clock });
    const written: string[] = [];
    const client: KubeClient = {
      async request<T>(req: KubeRequest): Promise<T> {
        written.push((req.body as { reason: string }).reason);
        return {} as T;
      },
    };
    const rec = new EventRecorder({
      client,
      clock,
      background: true,
      maxPending: 6,
      trail: { activity, maxMs: 30_000 },
    });
    // A burst that never pauses, one Event every 250 ms: with every write waiting for the lull, the
    // queue of 6 would overflow after 1.5 s; past 3 waiting they go, and all 12 are kept.
    for (let i = 0; i < 12; i++) {
      activity.touch();
      await rec.event(named(`e${i}`), 'Normal', `E${i}`, 'x');
      expect(rec.pending).toBeLessThanOrEqual(4);
      await clock.advance(250);
    }
    expect(written.length).toBeGreaterThanOrEqual(8);
    expect(written).toEqual(Array.from({ length: written.length }, (_, i) => `E${i}`));
    await clock.advance(1_000);
    expect(written).toEqual(Array.from({ length: 12 }, (_, i) => `E${i}`));
    expect(rec.pending).toBe(0);
  });

  it('repeats while their bump waits join it: one PATCH with the latest count, taking no place in the queue', async () => {
    const clock = new FakeClock(Date.UTC(2025, 0, 1));
    const c = gatedClient();
    const rec = new EventRecorder({ client: c.client, clock, background: true, maxPending: 3 });
    await rec.event(op, 'Warning', 'Blocked', 'same');
    for (let i = 0; i < 5; i++) {
      await clock.advance(1_000);
      await rec.event(op, 'Warning', 'Blocked', 'same');
    }
    // The create, and one bump for the five repeats.
    expect(rec.pending).toBe(2);
    await rec.event(named('other'), 'Normal', 'Other', 'x');
    expect(rec.pending).toBe(3);
    await c.openNext();
    await c.openNext();
    await c.openNext();
    expect(c.reqs.map((r) => r.method)).toEqual(['POST', 'PATCH', 'POST']);
    expect(c.reqs[1]?.body).toEqual({
      series: { count: 6, lastObservedTime: '2025-01-01T00:00:05.000000Z' },
    });
    // Once its bump went, the next repeat queues another.
    await rec.event(op, 'Warning', 'Blocked', 'same');
    expect(rec.pending).toBe(1);
    await c.openNext();
    expect(c.reqs[3]?.body).toMatchObject({ series: { count: 7 } });
    expect(rec.pending).toBe(0);
  });

  it('drops what does not fit in the queue', async () => {
    const c = gatedClient();
    const rec = new EventRecorder({ client: c.client, background: true, maxPending: 2 });
    await rec.event(named('a'), 'Normal', 'One', 'first');
    await rec.event(named('b'), 'Normal', 'Two', 'second');
    await rec.event(named('c'), 'Normal', 'Three', 'dropped');
    expect(rec.pending).toBe(2);
    await c.openNext();
    await c.openNext();
    expect(c.reasons()).toEqual(['One', 'Two']);
    expect(rec.pending).toBe(0);
  });
});
