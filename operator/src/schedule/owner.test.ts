import { KubeApiError } from '@vworkspace/runtime';
import { describe, expect, it } from 'vitest';
import type { Operation } from '../api/index.ts';
import { isControlledBy, schedulerOwner } from '../api/scheduler-owner.ts';
import { createOrAdopt } from './run-core.ts';

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

/** A client whose create answers AlreadyExists and whose read from the API server returns `existing`. */
function nameTaken(existing: Operation) {
  return {
    create: async <T>(): Promise<T> => {
      throw new KubeApiError(409, 'AlreadyExists', 'exists', undefined);
    },
    apiGet: async <T>(): Promise<T> => existing as T,
  };
}

describe('createOrAdopt', () => {
  const owner = { kind: 'CronOperation' as const, uid: 'u1' };

  it('creates the Operation as planned, labels and owner references included', async () => {
    const sent: unknown[] = [];
    const client = {
      create: async <T>(o: unknown): Promise<T> => {
        sent.push(o);
        return o as T;
      },
      apiGet: async <T>(): Promise<T> => {
        throw new Error('no read expected');
      },
    };
    const planned = op([ref('u1')], { 'ops.vworkspace.io/cron-operation': 'nightly' });
    expect(await createOrAdopt(client, planned, owner)).toEqual({ op: planned, adopted: false });
    expect(sent).toEqual([planned]);
  });

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
