// The kubectl vws plugin as a user gets it from krew and kubectl runs it: the release archive
// (hack/krew.ts: Node's single executable application and the LICENSE) unpacked with tar, its
// `kubectl-vws` linked into a directory that is the whole PATH, so no `node` can be found, started as its
// own process with KUBECONFIG, against the real API server. The CronOperation controller runs in-process
// on a FakeClock, so a run-now request is acted on.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock, PATCH_TYPES } from '@vworkspace/runtime';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { archiveName, writeKrewRelease } from '../../../hack/krew.ts';
import { SEA_PLATFORMS } from '../../../hack/packaging/sea.ts';
import type { CronOperation, Operation } from '../../../operator/src/api/index.ts';
import { manualRunPrefix } from '../../../operator/src/cli/requests.ts';
import { testClient } from '../../support/clients.ts';
import {
  create,
  cronObject,
  eventually,
  getObject,
  instanceObject,
  kinds,
  pathOf,
  type Schedulers,
  startSchedulers,
} from '../schedule/support.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('kubectl vws (the plugin as a process)', () => {
  const kc = adminKubeConfig();
  const raw = testClient(kc);
  const work = mkdtempSync(join(tmpdir(), 'vws-plugin-'));
  /** The whole PATH of the plugin's processes: only the link krew makes, no node. */
  const bin = join(work, 'bin');
  const children = new Set<ChildProcess>();
  let operator: Schedulers;
  let ns: string;

  /** Starts `kubectl-vws args` the way kubectl does: from PATH, with the user's environment. */
  function start(args: string[]): { child: ChildProcess; done: Promise<Run> } {
    const child = spawn('kubectl-vws', args, {
      env: {
        ...process.env,
        PATH: bin,
        KUBECONFIG: inject('kubeconfig'),
      },
    });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d) => {
      stdout += d;
    });
    child.stderr?.on('data', (d) => {
      stderr += d;
    });
    const done = new Promise<Run>((resolve) =>
      child.on('close', (code) => {
        children.delete(child);
        resolve({ code, stdout, stderr });
      }),
    );
    return { child, done };
  }
  const vws = (...args: string[]) => start([...args, '-n', ns]).done;
  const getOp = (name: string) => getObject<Operation>(raw, kinds.op, ns, name);

  beforeAll(async () => {
    // The release archive, unpacked as krew unpacks it; krew links ~/.krew/bin/kubectl-vws to the file.
    const release = join(work, 'release');
    await writeKrewRelease(release, '0.0.0-test');
    const unpacked = join(work, 'unpacked');
    mkdirSync(unpacked);
    mkdirSync(bin);
    const archive = join(release, archiveName('0.0.0-test', SEA_PLATFORMS[0]));
    expect(spawnSync('tar', ['-xzf', archive, '-C', unpacked]).status).toBe(0);
    symlinkSync(join(unpacked, 'kubectl-vws'), join(bin, 'kubectl-vws'));
    ns = await createNamespace(kc, 'vws');
    operator = startSchedulers(kc, new FakeClock(Date.now()));
    await create(raw, instanceObject(ns, 'shop', { capabilities: { backup: 'velero' } }));
    await create(raw, cronObject(ns, 'nightly'));
  });

  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    await operator.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it('is one executable that runs where no node can be found on PATH', async () => {
    // The negative control: on this PATH there is no node to run a script with.
    expect(spawnSync('node', ['--version'], { env: { PATH: bin } }).error).toMatchObject({ code: 'ENOENT' });
    const help = await start(['--help']).done;
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toMatch(/^kubectl vws — run, approve, cancel and follow/);
  });

  it('run cronoperation/<name>: asks for a run now and prints the Operation the operator created', async () => {
    const r = await vws('run', 'cronoperation/nightly', '--request', 'r1');
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const cron = await getObject<CronOperation>(raw, kinds.cron, ns, 'nightly');
    const name = manualRunPrefix(cron, 'r1');
    expect(r.stdout.split('\n')).toEqual([
      'cronoperation.ops.vworkspace.io/nightly run requested (ops.vworkspace.io/run-now=r1)',
      `operation.ops.vworkspace.io/${name} created`,
      '',
    ]);
    expect((await getOp(name)).metadata.annotations?.['ops.vworkspace.io/trigger']).toBe('manual');

    const status = await vws('status', 'cronoperation/nightly');
    expect(status.stdout).toContain(`Run now:       r1: Created (${name})`);
    const history = await vws('history', 'cronoperation/nightly');
    expect(history.stdout.split('\n')[0]).toMatch(/^NAME\s+TYPE\s+TARGET\s+TRIGGER\s+PHASE/);
    expect(history.stdout).toMatch(
      new RegExp(`${name}\\s+Backup\\s+shop\\s+manual \\(nightly\\)\\s+Pending`),
    );
  });

  it("run template/<name>, approve and cancel write what the API server admits; errors are the server's", async () => {
    const run = await vws(
      'run',
      'template/velero-backup',
      '--target',
      'shop',
      '--name',
      'by-hand',
      '-p',
      'ttl=24h',
    );
    expect(run).toMatchObject({ code: 0, stdout: 'operation.ops.vworkspace.io/by-hand created\n' });
    expect((await getOp('by-hand')).spec).toEqual({
      type: 'Backup',
      engine: 'velero',
      template: 'velero-backup',
      targetRef: { name: 'shop' },
      parameters: { ttl: '24h' },
    });
    expect((await vws('approve', 'by-hand')).code).toBe(0);
    expect((await getOp('by-hand')).metadata.annotations?.['ops.vworkspace.io/approve']).toBe('true');
    expect((await vws('cancel', 'operation/by-hand')).code).toBe(0);
    expect((await getOp('by-hand')).spec.cancel).toBe(true);

    const missing = await vws('status', 'ghost');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(
      /^Error from server \(NotFound\): operations.ops.vworkspace.io "ghost" not found/,
    );
    const unknown = await vws('run', 'template/my-catalog-template', '--target', 'shop');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(
      'template my-catalog-template is not built in: pass --type and --engine',
    );
  });

  it('restore <instance> writes a Restore from spec.source: the instance may be gone; --from another namespace is a clone', async () => {
    const here = await vws('restore', 'gone-app', '--name', 'bring-back');
    expect(here).toMatchObject({ code: 0, stdout: 'operation.ops.vworkspace.io/bring-back created\n' });
    expect((await getOp('bring-back')).spec).toEqual({
      type: 'Restore',
      engine: 'velero',
      targetRef: { name: 'gone-app' },
      source: { namespace: ns },
    });
    const clone = await vws('restore', 'shop', '--from', 'shop-prod', '--backup', 'b1', '--name', 'clone');
    expect(clone.code).toBe(0);
    expect((await getOp('clone')).spec).toMatchObject({
      source: { namespace: 'shop-prod' },
      parameters: { backupName: 'b1' },
    });
  });

  it('status -w follows an Operation live, one line per change, and exits 0 when it Succeeded', async () => {
    await vws('run', 'template/velero-backup', '--target', 'shop', '--name', 'followed');
    const { done, child } = start(['status', 'followed', '-w', '-n', ns]);
    let out = '';
    child.stdout?.on('data', (d) => {
      out += d;
    });
    // The status block comes from a GET before the follow lists again: a change made before that list
    // would never be a line of its own. The follow's first line says it is watching.
    await eventually('the first status', async () => out.includes('Conditions:'));
    await eventually('the follow', async () => / followed Pending\n/.test(out));
    const set = (status: unknown) =>
      raw.request({
        method: 'PATCH',
        path: pathOf(kinds.op, ns, 'followed', 'status'),
        body: { status },
        contentType: PATCH_TYPES.merge,
      });
    const cond = (status: string, reason: string) => ({
      type: 'Succeeded',
      status,
      reason,
      message: `${reason} message`,
      lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    });
    await set({
      phase: 'Running',
      startedAt: '2025-06-01T01:00:00Z',
      conditions: [cond('Unknown', 'VeleroBackupInProgress')],
    });
    await eventually('the Running line', async () => out.includes('followed Running VeleroBackupInProgress'));
    await set({
      phase: 'Succeeded',
      finishedAt: '2025-06-01T01:05:00Z',
      conditions: [cond('True', 'VeleroBackupCompleted')],
    });
    const r = await done;
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n').filter((l) => /^\d\d:\d\d:\d\d followed /.test(l));
    expect(lines.map((l) => l.slice(9))).toEqual([
      'followed Pending',
      'followed Running VeleroBackupInProgress: VeleroBackupInProgress message',
      'followed Succeeded VeleroBackupCompleted: VeleroBackupCompleted message',
    ]);
  });
});
