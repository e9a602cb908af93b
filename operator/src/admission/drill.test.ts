// The review a snapshot restore drill needs of its requester (drill.ts).
import { describe, expect, it } from 'vitest';
import { snapshotVerify, veleroVerify } from '../catalog/templates/index.ts';
import { drillAccess } from './drill.ts';

describe('drillAccess', () => {
  it('asks get on the named VolumeSnapshot, at parameters.snapshotName', () => {
    expect(drillAccess({ parameters: { snapshotName: 'nightly-1' } }, snapshotVerify, 'spec')).toEqual([
      expect.objectContaining({
        check: { verb: 'get', resource: 'volumesnapshots', name: 'nightly-1' },
        field: 'spec.parameters.snapshotName',
      }),
    ]);
  });

  it('asks list without a name (the newest Backup is chosen when the drill runs)', () => {
    expect(drillAccess({ parameters: {} }, snapshotVerify, 'spec.operationTemplate.spec')).toEqual([
      expect.objectContaining({
        check: { verb: 'list', resource: 'volumesnapshots' },
        field: 'spec.operationTemplate.spec.parameters',
      }),
    ]);
  });

  it('asks nothing of other templates', () => {
    expect(drillAccess({ parameters: { snapshotName: 'x' } }, veleroVerify, 'spec')).toEqual([]);
  });
});
