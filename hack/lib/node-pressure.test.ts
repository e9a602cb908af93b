import { describe, expect, it } from 'vitest';
import { eventually, failWaitsWhile } from './eventually.ts';
import { type FreeSpace, preflightProblem, pressureMessage } from './node-pressure.ts';

const GB = 1e9;
const disk = (freeBytes: number, totalBytes = 252 * GB): FreeSpace => ({
  path: '/tmp',
  freeBytes,
  totalBytes,
});

describe('pressureMessage', () => {
  it('says nothing while the kubelet reports no pressure', () => {
    expect(
      pressureMessage(
        [
          { type: 'Ready', status: 'True' },
          { type: 'DiskPressure', status: 'False' },
          { type: 'MemoryPressure', status: 'Unknown' },
        ],
        disk(2.7 * GB),
      ),
    ).toBeUndefined();
  });

  it('names DiskPressure, the free space of the filesystem and the threshold', () => {
    expect(pressureMessage([{ type: 'DiskPressure', status: 'True' }], disk(2.7 * GB))).toBe(
      'the kubelet reports DiskPressure: it evicts pods; /tmp has 2.7 GB free of 252.0 GB (its threshold is 1 %, 2.5 GB): free disk space and rerun',
    );
  });

  it('names every pressure at once, with what the kubelet said about memory and pids', () => {
    const m = pressureMessage(
      [
        { type: 'MemoryPressure', status: 'True', message: 'kubelet has insufficient memory available' },
        { type: 'PIDPressure', status: 'True' },
        { type: 'DiskPressure', status: 'True' },
      ],
      disk(1 * GB),
    );
    expect(m).toContain('DiskPressure');
    expect(m).toContain(
      'the kubelet reports MemoryPressure: it evicts pods (kubelet has insufficient memory available): free memory',
    );
    expect(m).toContain('the kubelet reports PIDPressure: it evicts pods: free process ids');
  });
});

describe('preflightProblem', () => {
  it('lets the node start when its peak plus the eviction threshold is free', () => {
    expect(preflightProblem(disk(20 * GB), 10 * GB)).toBeUndefined();
    expect(preflightProblem(disk(10 * GB + 2.52 * GB), 10 * GB)).toBeUndefined();
  });

  it('refuses, with the numbers, when the threshold would be crossed during the run', () => {
    expect(preflightProblem(disk(12 * GB), 10 * GB)).toBe(
      'the real node needs 12.5 GB free on the filesystem of /tmp (10.0 GB for its directory at its peak, plus the kubelet\'s eviction threshold of 1 % of 252.0 GB), and it has 12.0 GB: free disk space and rerun (docs/real-node.md, "Disk")',
    );
  });
});

describe('failWaitsWhile', () => {
  it('makes a wait give up at once with the reason, and waits normally once it is removed', async () => {
    let reason: string | undefined = 'the kubelet reports DiskPressure';
    const remove = failWaitsWhile(() => reason);
    try {
      await expect(eventually('a pod Running', () => false, 600_000)).rejects.toThrow(
        'gave up waiting for a pod Running: the kubelet reports DiskPressure',
      );
      reason = undefined;
      let polls = 0;
      await expect(eventually('a third poll', () => ++polls >= 3, 60_000, 1)).resolves.toBe(true);
    } finally {
      remove();
    }
    reason = 'gone';
    await expect(eventually('after removal', () => 'ok', 1000)).resolves.toBe('ok');
  });
});
