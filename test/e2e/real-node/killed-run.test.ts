// A killed run leaves nothing behind: a child process starts a real node with a running pod and is
// SIGKILLed, so only the node's guard (started by startRealNode, hack/lib/real-node-cleanup.sh) can
// take it down; then the pod's process is gone and hack/lib/real-node-leaks.sh finds nothing.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ROOT } from '../../../hack/lib/controlplane.ts';
import { LOCK } from '../../../hack/lib/real-node.ts';
import { eventually } from '../../support/eventually.ts';

const alive = (pid: number) => existsSync(`/proc/${pid}`);

it('SIGKILL of the process that started a node: its guard removes everything, the pod process included', async () => {
  const child = spawn(process.execPath, [join(ROOT, 'test/e2e/real-node/node-with-a-pod.ts')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => {
    out += b.toString();
  });
  const pid = await eventually(
    'the node up and its pod running',
    () => {
      if (child.exitCode !== null) throw new Error(`the node process exited ${child.exitCode}:\n${out}`);
      const m = /^POD (\d+)$/m.exec(out);
      return m ? Number(m[1]) : undefined;
    },
    300_000,
    500,
  );
  const workdir = /^UP (\S+)$/m.exec(out)?.[1];
  expect(alive(pid)).toBe(true);
  child.kill('SIGKILL');
  await eventually('the guard done: lock released', () => !existsSync(LOCK), 180_000, 500);
  await eventually('the pod process gone', () => !alive(pid), 30_000, 500);
  if (workdir) expect(existsSync(workdir)).toBe(false);
  const leaks = spawnSync(join(ROOT, 'hack/lib/real-node-leaks.sh'), { encoding: 'utf8' });
  expect(leaks.status, leaks.stdout).toBe(0);
});
