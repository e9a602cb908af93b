import { describe, expect, it } from 'vitest';
import { parseArgs, parseRef } from './args.ts';

describe('kubectl vws arguments', () => {
  it('parses each command with kubectl-style global flags anywhere', () => {
    expect(parseArgs(['run', 'cronop/nightly', '-n', 'team', '--request=r1'])).toEqual({
      ok: true,
      globals: { namespace: 'team', allNamespaces: false },
      command: { cmd: 'run-cron', name: 'nightly', request: 'r1', wait: true, follow: false },
    });
    expect(
      parseArgs([
        'run',
        'template/velero-backup',
        '--target',
        'shop',
        '-p',
        'ttl=24h',
        '-p',
        'keep=true',
        '-p',
        'a.b=1',
        '-w',
      ]),
    ).toMatchObject({
      ok: true,
      command: {
        cmd: 'run-template',
        template: 'velero-backup',
        target: 'shop',
        parameters: { ttl: '24h', keep: true, a: { b: 1 } },
        follow: true,
      },
    });
    expect(
      parseArgs(['restore', 'shop', '--from', 'shop-prod', '--backup=b1', '-n', 'shop-staging', '-w']),
    ).toEqual({
      ok: true,
      globals: { namespace: 'shop-staging', allNamespaces: false },
      command: { cmd: 'restore', instance: 'shop', from: 'shop-prod', backup: 'b1', follow: true },
    });
    expect(parseArgs(['restore', 'ai/shop'])).toMatchObject({
      command: { cmd: 'restore', instance: 'shop' },
    });
    expect(parseArgs(['restore', 'cronop/nightly'])).toMatchObject({ ok: false });
    expect(parseArgs(['--context', 'prod', 'approve', 'op1'])).toMatchObject({
      globals: { context: 'prod' },
      command: { cmd: 'approve', name: 'op1' },
    });
    expect(parseArgs(['status', 'ai/shop', '-w'])).toMatchObject({
      command: { cmd: 'status', ref: { kind: 'applicationinstance', name: 'shop' }, watch: true },
    });
    expect(parseArgs(['history', '-A', '--type', 'Backup'])).toMatchObject({
      globals: { allNamespaces: true },
      command: { cmd: 'history', type: 'Backup', limit: 20 },
    });
    expect(parseArgs([])).toMatchObject({ ok: true, command: { cmd: 'help' } });
  });

  it.each([
    [['run', 'template/x'], '--target <ApplicationInstance> is required'],
    [['run', 'operation/x'], 'cannot run a operation'],
    [['approve', 'cronoperation/x'], 'only Operations can be approved'],
    [['status', 'pods/x'], 'unknown kind "pods"'],
    [['history', '--limit', '0'], '--limit must be a positive integer'],
    [['frob'], 'unknown command "frob"'],
    [['status', 'x', '--bogus'], 'unknown flag --bogus'],
    [['status', 'x', '-n'], '-n needs a value'],
    [['run', 'template/x', '--target', 's', '-p', 'novalue'], 'use key=value'],
  ])('refuses %j: %s', (argv, text) => {
    const r = parseArgs(argv);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toContain(text);
  });

  it('reads full resource names', () => {
    expect(parseRef('cronoperations.ops.vworkspace.io/nightly', 'operation')).toEqual({
      kind: 'cronoperation',
      name: 'nightly',
    });
    expect(parseRef('shop', 'applicationinstance')).toEqual({ kind: 'applicationinstance', name: 'shop' });
  });
});
