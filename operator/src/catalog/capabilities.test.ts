import { describe, expect, it } from 'vitest';
import { capabilityAnnotationsOf, effectiveCapabilities } from './capabilities.ts';

const a = (verb: string) => `ops.vworkspace.io/${verb}`;

describe('effectiveCapabilities', () => {
  it('takes the catalog entry first and reports it as the source', () => {
    const r = effectiveCapabilities({}, { capabilities: { restore: 'velero', backup: 'velero' } }, undefined);
    expect(r.capabilities).toEqual([
      { verb: 'backup', engine: 'velero', source: 'catalog' },
      { verb: 'restore', engine: 'velero', source: 'catalog' },
    ]);
    expect(r.ignored).toEqual([]);
  });

  it('uses chart annotations only where the catalog entry opts in, and only for verbs it does not set', () => {
    const chart = { [a('backup')]: 'volsync', [a('migration')]: 'helmHookJob', 'other/annotation': 'x' };
    const optedIn = effectiveCapabilities(
      {},
      { capabilities: { backup: 'velero' }, chartAnnotations: true },
      chart,
    );
    expect(optedIn.capabilities).toEqual([
      { verb: 'backup', engine: 'velero', source: 'catalog' },
      { verb: 'migration', engine: 'helmHookJob', source: 'chart' },
    ]);
    expect(optedIn.ignored).toEqual([
      { verb: 'backup', value: 'volsync', source: 'chart', reason: 'overridden by the catalog (velero)' },
    ]);
    const notOptedIn = effectiveCapabilities({}, { capabilities: { backup: 'velero' } }, chart);
    expect(notOptedIn.capabilities).toEqual([{ verb: 'backup', engine: 'velero', source: 'catalog' }]);
    expect(notOptedIn.ignored.map((i) => i.verb)).toEqual(['backup', 'migration']);
  });

  it('keeps annotations on the instance as manual when neither catalog nor chart sets the verb', () => {
    const annotations = {
      [a('backup')]: 'velero', // projected from the catalog: same value, stays "catalog"
      [a('runcommand')]: 'job',
      [a('paused')]: 'true', // not a capability
      [a('approve')]: 'true',
    };
    const r = effectiveCapabilities(annotations, { capabilities: { backup: 'velero' } }, undefined);
    expect(r.capabilities).toEqual([
      { verb: 'backup', engine: 'velero', source: 'catalog' },
      { verb: 'runcommand', engine: 'job', source: 'manual' },
    ]);
    expect(r.ignored).toEqual([]);
  });

  it('lets the catalog win over a conflicting hand-set annotation, and ignores unknown engines', () => {
    const r = effectiveCapabilities(
      { [a('backup')]: 'volsync', [a('restore')]: 'restic' },
      { capabilities: { backup: 'velero' } },
      {},
    );
    expect(r.capabilities).toEqual([{ verb: 'backup', engine: 'velero', source: 'catalog' }]);
    expect(r.ignored).toEqual([
      { verb: 'backup', value: 'volsync', source: 'manual', reason: 'overridden by the catalog (velero)' },
      {
        verb: 'restore',
        value: 'restic',
        source: 'manual',
        reason: expect.stringContaining('unknown engine'),
      },
    ]);
  });

  it('works without a catalog entry (manual only)', () => {
    const r = effectiveCapabilities({ [a('quiesce')]: 'exec' }, undefined, undefined);
    expect(r.capabilities).toEqual([{ verb: 'quiesce', engine: 'exec', source: 'manual' }]);
  });

  it('turns capabilities back into the annotations Pull mode projects', () => {
    expect(capabilityAnnotationsOf([{ verb: 'backup', engine: 'velero', source: 'catalog' }])).toEqual({
      [a('backup')]: 'velero',
    });
  });
});
