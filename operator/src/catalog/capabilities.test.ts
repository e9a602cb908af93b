import { describe, expect, it } from 'vitest';
import { capabilityAnnotationsOf, desiredCapabilities } from './capabilities.ts';

const a = (verb: string) => `ops.vworkspace.io/${verb}`;

describe('desiredCapabilities', () => {
  it('takes the catalog entry first and reports it as the source', () => {
    const r = desiredCapabilities({ capabilities: { restore: 'velero', backup: 'velero' } }, undefined);
    expect(r.capabilities).toEqual([
      { verb: 'backup', engine: 'velero', source: 'catalog' },
      { verb: 'restore', engine: 'velero', source: 'catalog' },
    ]);
    expect(r.ignored).toEqual([]);
  });

  it('uses chart annotations only where the catalog entry opts in, and only for verbs it does not set', () => {
    const chart = { [a('backup')]: 'volsync', [a('migration')]: 'helmHookJob', 'other/annotation': 'x' };
    const optedIn = desiredCapabilities(
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
    const notOptedIn = desiredCapabilities({ capabilities: { backup: 'velero' } }, chart);
    expect(notOptedIn.capabilities).toEqual([{ verb: 'backup', engine: 'velero', source: 'catalog' }]);
    expect(notOptedIn.ignored.map((i) => i.verb)).toEqual(['backup', 'migration']);
  });

  it('ignores an opted-in chart annotation naming an unknown engine', () => {
    const r = desiredCapabilities({ chartAnnotations: true }, { [a('restore')]: 'restic' });
    expect(r.capabilities).toEqual([]);
    expect(r.ignored).toEqual([
      {
        verb: 'restore',
        value: 'restic',
        source: 'chart',
        reason: expect.stringContaining('unknown engine'),
      },
    ]);
  });

  it('wants nothing without a catalog entry', () => {
    expect(desiredCapabilities(undefined, { [a('backup')]: 'velero' }).capabilities).toEqual([]);
  });

  it('turns capabilities back into the annotations Pull mode projects', () => {
    expect(capabilityAnnotationsOf([{ verb: 'backup', engine: 'velero', source: 'catalog' }])).toEqual({
      [a('backup')]: 'velero',
    });
  });
});
