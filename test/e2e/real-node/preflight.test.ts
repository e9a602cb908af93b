// The disk pre-flight (docs/real-node.md, "Disk"): a node that would fill the disk during the run is
// refused before it takes the node lock or builds anything. VWS_NODE_FREE_BYTES stands in for the free
// space statfs reports, so no disk is filled; the child process keeps it out of this worker.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ROOT } from '../../../hack/lib/controlplane.ts';

it('a disk with 1 GB free: the node refuses to start and says how much it needs and what to do', () => {
  const child = spawnSync(process.execPath, [join(ROOT, 'test/e2e/real-node/node-with-a-pod.ts')], {
    env: { ...process.env, VWS_NODE_FREE_BYTES: '1000000000' },
    encoding: 'utf8',
    timeout: 120_000,
  });
  expect(child.status).not.toBe(0);
  expect(child.stdout).not.toContain('UP ');
  expect(child.stderr).toMatch(
    /the real node needs \d+\.\d GB free on the filesystem of \/tmp \(5\.0 GB for its directory at its peak, plus the kubelet's eviction threshold of 1 % of \d+\.\d GB\), and it has 1\.0 GB: free disk space and rerun/,
  );
});
