// Hole 4 of issue 28 (decompression bomb): a Helm release record is base64 of gzipped JSON, written by
// whoever may write Secrets in the namespace. A record of about 600 KiB that inflates to 450 MiB, and an
// instance naming its release, took the operator from 133 MiB to 2 GiB of memory (the pod's limit is
// 512 MiB: killed) and stalled its webhook. The operator inflates at most a bounded number of bytes of a
// record: this one is refused with Ready=False/ReleaseRecordUnreadable saying what is wrong and what to do,
// and the process stays far below its memory limit and keeps answering.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { releaseBomb, releaseSecret } from '../../support/release-bomb.ts';
import { csvInstall, startWorld, type World } from './harness.ts';
import { createInstance, getInstance } from './support.ts';

const MIB = 1024 * 1024;

/** The memory limit of the CSV's Deployment: above it the kubelet kills the pod. */
function podMemoryLimit(): number {
  const deployment = csvInstall().deployments?.[0] as
    | { spec: { template: { spec: { containers: { resources?: { limits?: { memory?: string } } }[] } } } }
    | undefined;
  const limit = deployment?.spec.template.spec.containers[0]?.resources?.limits?.memory ?? '';
  const m = /^(\d+)Mi$/.exec(limit);
  if (!m) throw new Error(`the CSV's memory limit ${JSON.stringify(limit)} is not in Mi`);
  return Number(m[1]) * MIB;
}

/** The peak resident memory of a process (VmHWM), in bytes. */
function peakRss(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
}

describe('a release record that inflates without bound', () => {
  let w: World;
  let ns: string;
  const mallory = () => w.as('mallory');

  beforeAll(async () => {
    w = await startWorld();
    ns = w.namespaces[0];
    // A tenant who may write Secrets (as anyone running helm in the namespace may) and instances.
    await w.grant('mallory', ns, [
      { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['create', 'get'] },
    ]);
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('is refused with a condition, and the operator stays within its memory limit and keeps serving', async () => {
    const data = await releaseBomb('bomb', ns, 450);
    // What the API server stores (Secret data is base64 on the wire): under a Secret's 1 MiB.
    expect(Buffer.from(data, 'base64').length).toBeLessThan(MIB);
    await mallory().request({
      method: 'POST',
      path: `/api/v1/namespaces/${ns}/secrets`,
      body: releaseSecret('bomb', data),
    });
    await createInstance(mallory(), ns, 'bomb', { name: 'bomb' });

    // Whatever the operator makes of the record, it has read it once the instance has a Ready condition.
    const instance = await w.waitFor(
      'the instance to get a Ready condition',
      async () => {
        const i = await getInstance(w, ns, 'bomb');
        return i.status?.conditions?.some((c) => c.type === 'Ready') ? i : undefined;
      },
      240_000,
    );
    const pid = w.operator.child.pid;
    if (pid === undefined) throw new Error('the operator process has no pid');
    expect(w.operator.crashed).toBe(false);
    expect(peakRss(pid)).toBeLessThan(podMemoryLimit());

    const ready = instance.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({ status: 'False', reason: 'ReleaseRecordUnreadable' });
    expect(ready?.message).toContain('sh.helm.release.v1.bomb.v1');
    expect(ready?.message).toMatch(/inflates to more than \d+ MiB/);
    expect(instance.status?.release).toBeUndefined();
    // Still judging: the webhook answers the next request.
    const d = await w.denial(
      createInstance(mallory(), ns, 'elsewhere', { name: 'x', namespace: w.namespaces[1] }),
    );
    expect(d.causes.map((c) => c.field)).toEqual(['spec.release.namespace']);
  }, 300_000);
});
