import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { operation } from '../../../test/support/builders/operation.ts';
import { newestBackup, recordedInstance } from './restore-source.ts';

const backup = (
  name: string,
  o: { ns?: string; instance?: string; phase?: string; done?: string; release?: string } = {},
): KubernetesObject =>
  ({
    metadata: {
      name,
      labels: {
        'ops.vworkspace.io/operation-namespace': o.ns ?? 'shop',
        'ops.vworkspace.io/instance': o.instance ?? 'app',
        ...(o.release === '' ? {} : { 'ops.vworkspace.io/release': o.release ?? 'app' }),
      },
      annotations: { 'ops.vworkspace.io/restore': 'velero' },
    },
    status: { phase: o.phase ?? 'Completed', completionTimestamp: o.done ?? '2026-11-26T02:00:00Z' },
  }) as KubernetesObject;

const restore = operation(
  'bring-back',
  { type: 'Restore', source: { namespace: 'shop' } },
  { namespace: 'shop' },
);

describe('the Backup of a Restore from spec.source', () => {
  it('is the newest Completed one of the instance made for the source namespace', () => {
    const found = newestBackup(
      [
        backup('old', { done: '2026-11-25T02:00:00Z' }),
        backup('new', { done: '2026-11-26T02:00:00Z' }),
        backup('failed', { done: '2026-11-27T02:00:00Z', phase: 'PartiallyFailed' }),
        backup('theirs', { done: '2026-11-27T03:00:00Z', ns: 'other' }),
        backup('another-instance', { done: '2026-11-27T04:00:00Z', instance: 'wiki' }),
      ],
      'shop',
      'app',
    );
    expect(found?.name).toBe('new');
    expect(newestBackup([backup('x', { phase: 'InProgress' })], 'shop', 'app')).toBeUndefined();
  });
});

describe('the instance a Backup recorded, standing in for one that is gone', () => {
  it('carries the release and the restore capability the Backup recorded, nothing the requester wrote', () => {
    const r = recordedInstance(restore, newestBackup([backup('new')], 'shop', 'app'));
    expect(r.recorded).toMatchObject({
      metadata: { name: 'app', namespace: 'shop', annotations: { 'ops.vworkspace.io/restore': 'velero' } },
      spec: { release: { name: 'app' } },
    });
  });

  it('says why there is none: no Backup, or one that does not record this instance', () => {
    expect(recordedInstance(restore, undefined)).toEqual({
      problem: expect.stringContaining(
        'there is no Completed velero.io Backup of it made for namespace shop',
      ),
    });
    const old = recordedInstance(restore, newestBackup([backup('b', { release: '' })], 'shop', 'app'));
    expect(old.recorded).toBeUndefined();
    expect(old.problem).toContain('recreate the ApplicationInstance first');
  });
});
