// kubectl vws resume|abandon and the rollout part of `kubectl vws status cronoperation/<name>`.
import { describe, expect, it } from 'vitest';
import { anInstance, CronWorld, cronOp, MIN } from '../../../test/support/builders/schedule.ts';
import { parseArgs } from './args.ts';
import { cronStatus } from './format.ts';
import { rolloutControlProblem, rolloutPatch } from './requests.ts';

/** A fleet of 25 whose first wave of 3 failed twice with a budget of 1: Halted. */
function haltedWorld(): CronWorld {
  const w = new CronWorld(
    cronOp({
      targetSelector: { matchLabels: { tier: 'prod' } },
      rollout: { waves: [3, '100%'], failureBudget: 1 },
      operationTemplate: { spec: { type: 'Upgrade', engine: 'helm' } },
    }),
    '2025-06-01T00:30:00Z',
  );
  w.instances = Array.from({ length: 25 }, (_, i) =>
    anInstance(`db-${String(i).padStart(2, '0')}`, { tier: 'prod' }),
  );
  w.reconcile();
  w.clock.advanceSync(30 * MIN);
  w.reconcile();
  const opOf = (t: string) => w.ops.find((o) => o.spec.targetRef.name === t)?.metadata.name ?? '';
  w.finish(opOf('db-00'), 'Failed');
  w.finish(opOf('db-01'), 'Failed');
  w.reconcile();
  return w;
}

describe('kubectl vws resume and abandon', () => {
  it('parse for a CronOperation or a WatchOperation, as kind/name or kind name, and refuse other kinds', () => {
    expect(parseArgs(['resume', 'cronoperation/nightly', '-n', 'team'])).toMatchObject({
      ok: true,
      command: { cmd: 'resume', name: 'nightly' },
    });
    expect(parseArgs(['abandon', 'cronoperation', 'nightly'])).toMatchObject({
      ok: true,
      command: { cmd: 'abandon', name: 'nightly' },
    });
    expect(parseArgs(['resume', 'watchoperation/w'])).toMatchObject({
      ok: true,
      command: { cmd: 'resume', kind: 'watchoperation', name: 'w' },
    });
    const op = parseArgs(['resume', 'operation/o']);
    expect(op.ok).toBe(false);
    expect(op.ok ? '' : op.message).toContain("only a CronOperation's or WatchOperation's run");
  });

  it('resume a Halted run only; abandon an unfinished one only', () => {
    const w = haltedWorld();
    expect(rolloutControlProblem(w.cron, 'resume')).toBeUndefined();
    expect(rolloutControlProblem(w.cron, 'abandon')).toBeUndefined();
    expect(rolloutPatch('resume', 't1')).toEqual({
      metadata: { annotations: { 'ops.vworkspace.io/resume': 't1' } },
    });
    expect(rolloutControlProblem(cronOp(), 'resume')).toContain('no fleet run rolled out in waves');
    w.cron.metadata.annotations = { 'ops.vworkspace.io/abandon': 'a1' };
    w.reconcile();
    expect(rolloutControlProblem(w.cron, 'resume')).toContain('Abandoned');
    expect(rolloutControlProblem(w.cron, 'abandon')).toContain('already Abandoned');
  });

  it('status prints the halted run: phase, budget, the failed, running and remaining instances, the condition', () => {
    const out = cronStatus(haltedWorld().cron).split('\n');
    expect(out).toContainEqual(
      expect.stringMatching(/^ {2}Phase: +Halted \(FailureBudgetExceeded\), wave 1 of 2$/),
    );
    expect(out).toContainEqual(expect.stringMatching(/^ {2}Failures: +2 of a budget of 1$/));
    expect(out).toContainEqual(expect.stringMatching(/^ {2}Failed: +2: db-00, db-01$/));
    expect(out).toContainEqual(expect.stringMatching(/^ {2}Running: +1: db-02$/));
    expect(out).toContainEqual(
      expect.stringMatching(/^ {2}Not started: +22: db-03, db-04, .*, db-22 and 2 more$/),
    );
    expect(out).toContainEqual(
      expect.stringMatching(/^Condition: Halted=True FailureBudgetExceeded: .*kubectl vws resume/),
    );
  });
});
