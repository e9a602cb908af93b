import { describe, expect, it } from 'vitest';
import type { Operation } from '../api/index.ts';
import { KubeApiError, type KubeClient, type KubeRequest } from '../runtime/index.ts';
import { createOrAdopt } from './operations-io.ts';
import { isControlledBy, schedulerOwner } from './owner.ts';

const op = (
  ownerReferences?: NonNullable<Operation['metadata']['ownerReferences']>,
  labels = {},
): Operation => ({
  apiVersion: 'ops.vworkspace.io/v1alpha1',
  kind: 'Operation',
  metadata: {
    name: 'nightly-29000000',
    namespace: 'team',
    labels,
    ...(ownerReferences ? { ownerReferences } : {}),
  },
  spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'shop' } },
});
const ref = (uid: string, kind = 'CronOperation', controller = true) => ({
  apiVersion: 'ops.vworkspace.io/v1alpha1',
  kind,
  name: 'nightly',
  uid,
  controller,
});

describe('which scheduler an Operation belongs to', () => {
  it('is its controller ownerReference of that kind and uid, never a label', () => {
    expect(isControlledBy(op([ref('u1')]), 'CronOperation', 'u1')).toBe(true);
    expect(isControlledBy(op([ref('u2')]), 'CronOperation', 'u1')).toBe(false);
    expect(isControlledBy(op([ref('u1', 'CronOperation', false)]), 'CronOperation', 'u1')).toBe(false);
    expect(isControlledBy(op([ref('u1', 'WatchOperation')]), 'CronOperation', 'u1')).toBe(false);
    expect(
      isControlledBy(op(undefined, { 'ops.vworkspace.io/cron-operation': 'nightly' }), 'CronOperation', 'u1'),
    ).toBe(false);
    expect(isControlledBy(op([ref('')]), 'CronOperation', '')).toBe(false);
    expect(
      schedulerOwner(op([{ ...ref('u1'), apiVersion: 'example.com/v1' }]), 'CronOperation'),
    ).toBeUndefined();
  });
});

/** A client whose POST answers AlreadyExists and whose GET returns `existing`. */
function nameTaken(existing: Operation): KubeClient & { requests: KubeRequest[] } {
  const requests: KubeRequest[] = [];
  return {
    requests,
    request: async <T>(req: KubeRequest): Promise<T> => {
      requests.push(req);
      if (req.method === 'POST') throw new KubeApiError(409, 'AlreadyExists', 'exists', undefined);
      return existing as T;
    },
  };
}

describe('createOrAdopt', () => {
  const owner = { kind: 'CronOperation' as const, uid: 'u1' };

  it('adopts an existing Operation of the name only when this scheduler controls it', async () => {
    const mine = op([ref('u1')]);
    expect(await createOrAdopt(nameTaken(mine), mine, owner)).toEqual({ op: mine, adopted: true });
  });

  it('reports a name taken by anyone else’s Operation, labelled as ours or not', async () => {
    const squatted = op(undefined, { 'ops.vworkspace.io/cron-operation': 'nightly' });
    expect(await createOrAdopt(nameTaken(squatted), op([ref('u1')]), owner)).toEqual({
      op: squatted,
      taken: true,
    });
    const namesake = op([ref('u0')]);
    expect(await createOrAdopt(nameTaken(namesake), op([ref('u1')]), owner)).toEqual({
      op: namesake,
      taken: true,
    });
  });
});
