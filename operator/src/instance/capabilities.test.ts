import type { V1ManagedFieldsEntry } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { APPLICATION_INSTANCE, type ApplicationInstance } from '../api/index.ts';
import { annotationOwners, planCapabilities } from './capabilities.ts';

const ME = 'vworkspace-operator';
const a = (verb: string) => `ops.vworkspace.io/${verb}`;

/** A managedFields entry owning the given annotation keys. */
function owns(manager: string, operation: 'Apply' | 'Update', keys: string[]): V1ManagedFieldsEntry {
  return {
    manager,
    operation,
    apiVersion: APPLICATION_INSTANCE.apiVersion,
    fieldsType: 'FieldsV1',
    fieldsV1: { 'f:metadata': { 'f:annotations': Object.fromEntries(keys.map((k) => [`f:${k}`, {}])) } },
  };
}

function instance(annotations: Record<string, string> = {}, managedFields: V1ManagedFieldsEntry[] = []) {
  const ai: ApplicationInstance = {
    apiVersion: APPLICATION_INSTANCE.apiVersion,
    kind: APPLICATION_INSTANCE.kind,
    metadata: { name: 'shop', namespace: 'team-a', annotations, managedFields },
    spec: { appRef: { catalogId: 'shop' }, release: { name: 'shop' } },
  };
  return ai;
}

describe('annotationOwners', () => {
  it("splits the operator's Apply entry from every other manager", () => {
    const ai = instance({}, [
      owns(ME, 'Apply', [a('backup')]),
      owns(ME, 'Update', [a('restore')]), // our merge patches are not our applied configuration
      owns('argocd-controller', 'Apply', [a('upgrade')]),
    ]);
    const { ours, others } = annotationOwners(ai, ME);
    expect([...ours]).toEqual([a('backup')]);
    expect(Object.fromEntries(others)).toEqual({
      [a('restore')]: [ME],
      [a('upgrade')]: ['argocd-controller'],
    });
  });
});

describe('planCapabilities (Pull mode)', () => {
  it('projects the catalog entry onto a fresh instance and reports it as the source', () => {
    const plan = planCapabilities(
      instance(),
      { capabilities: { backup: 'velero', restore: 'velero' } },
      {},
      ME,
    );
    expect(plan.apply).toEqual({ [a('backup')]: 'velero', [a('restore')]: 'velero' });
    expect(plan.capabilities).toEqual([
      { verb: 'backup', engine: 'velero', source: 'catalog' },
      { verb: 'restore', engine: 'velero', source: 'catalog' },
    ]);
    expect(plan.held).toEqual([]);
    // Should the API server refuse the apply, the instance advertises what it has: nothing.
    expect(plan.unchanged).toEqual([]);
  });

  it('writes nothing when the annotations it owns are already the projection', () => {
    const ai = instance({ [a('backup')]: 'velero' }, [owns(ME, 'Apply', [a('backup')])]);
    const plan = planCapabilities(ai, { capabilities: { backup: 'velero' } }, {}, ME);
    expect(plan.apply).toBeUndefined();
    expect(plan.capabilities).toEqual([{ verb: 'backup', engine: 'velero', source: 'catalog' }]);
  });

  it('never overrides an annotation another manager owns with a different value (Push/GitOps win)', () => {
    const ai = instance({ [a('backup')]: 'volsync' }, [owns('argocd-controller', 'Apply', [a('backup')])]);
    const plan = planCapabilities(ai, { capabilities: { backup: 'velero', restore: 'velero' } }, {}, ME);
    expect(plan.apply).toEqual({ [a('restore')]: 'velero' });
    expect(plan.held).toEqual([
      {
        verb: 'backup',
        wanted: { verb: 'backup', engine: 'velero', source: 'catalog' },
        current: 'volsync',
        managers: ['argocd-controller'],
      },
    ]);
    expect(plan.capabilities).toEqual([
      { verb: 'backup', engine: 'volsync', source: 'manual' },
      { verb: 'restore', engine: 'velero', source: 'catalog' },
    ]);
  });

  it('co-owns an annotation another manager set to the same value (Push mode already present)', () => {
    const ai = instance({ [a('backup')]: 'velero' }, [
      owns('kubectl-client-side-apply', 'Update', [a('backup')]),
    ]);
    const plan = planCapabilities(ai, { capabilities: { backup: 'velero' } }, {}, ME);
    expect(plan.apply).toEqual({ [a('backup')]: 'velero' });
    expect(plan.capabilities).toEqual([{ verb: 'backup', engine: 'velero', source: 'catalog' }]);
  });

  it('removes what it projected when the catalog entry drops a verb or goes away', () => {
    const ai = instance({ [a('backup')]: 'velero', [a('restore')]: 'velero' }, [
      owns(ME, 'Apply', [a('backup'), a('restore')]),
    ]);
    const dropped = planCapabilities(ai, { capabilities: { backup: 'velero' } }, {}, ME);
    expect(dropped.apply).toEqual({ [a('backup')]: 'velero' });
    expect(dropped.capabilities).toEqual([{ verb: 'backup', engine: 'velero', source: 'catalog' }]);
    const gone = planCapabilities(ai, undefined, {}, ME);
    expect(gone.apply).toEqual({});
    expect(gone.capabilities).toEqual([]);
  });

  it('adds opted-in chart annotations for verbs the entry does not set, with source chart', () => {
    const chart = { [a('migration')]: 'helmHookJob', [a('backup')]: 'volsync' };
    const plan = planCapabilities(
      instance(),
      { capabilities: { backup: 'velero' }, chartAnnotations: true },
      chart,
      ME,
    );
    expect(plan.apply).toEqual({ [a('backup')]: 'velero', [a('migration')]: 'helmHookJob' });
    expect(plan.capabilities).toEqual([
      { verb: 'backup', engine: 'velero', source: 'catalog' },
      { verb: 'migration', engine: 'helmHookJob', source: 'chart' },
    ]);
    expect(plan.ignored.map((i) => `${i.source}:${i.verb}`)).toEqual(['chart:backup']);
  });

  it('reports hand-set capabilities as manual and ignores unknown engines and non-capability keys', () => {
    const ai = instance({ [a('runcommand')]: 'job', [a('restore')]: 'restic', [a('paused')]: 'true' }, [
      owns('kubectl-edit', 'Update', [a('runcommand'), a('restore'), a('paused')]),
    ]);
    const plan = planCapabilities(ai, undefined, undefined, ME);
    expect(plan.apply).toBeUndefined();
    expect(plan.capabilities).toEqual([{ verb: 'runcommand', engine: 'job', source: 'manual' }]);
    expect(plan.ignored).toEqual([
      {
        verb: 'restore',
        value: 'restic',
        source: 'manual',
        reason: expect.stringContaining('unknown engine'),
      },
    ]);
  });
});
