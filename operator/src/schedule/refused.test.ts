import type { Condition } from '@vworkspace/runtime';
import { KubeApiError, refusalOf } from '@vworkspace/runtime';
import { describe, expect, it } from 'vitest';
import { cronOp } from '../../../test/support/builders/schedule.ts';
import { decideCron } from './cron-decide.ts';
import { keepRefusal, OPERATION_REFUSED, refuseCronRuns } from './refused.ts';

const cron = () => cronOp({}, undefined, 2);

const denied = new KubeApiError(
  403,
  'Forbidden',
  'admission webhook "voperation.ops.vworkspace.io" denied the request: spec.targetRef.name: Forbidden: x may not backup applicationinstances/shop',
  undefined,
);

describe('a refused create', () => {
  it('is a 4xx the same request cannot change; conflicts, throttling and server errors are retried', () => {
    for (const code of [400, 403, 404, 422])
      expect(refusalOf(new KubeApiError(code, 'X', 'm', undefined))).toBeDefined();
    for (const code of [409, 429, 500, 503])
      expect(refusalOf(new KubeApiError(code, 'X', 'm', undefined))).toBeUndefined();
    expect(refusalOf(new Error('socket hang up'))).toBeUndefined();
  });

  it('turns the CronOperation Ready=False/OperationRefused, records the slot, moves on, and warns once per refusal', () => {
    const now = new Date('2025-06-01T01:00:10Z');
    const plan = decideCron(cron(), [], now);
    const op = plan.create[0];
    expect(op?.metadata.name).toBeDefined();
    const refused = refuseCronRuns(plan, op ? [{ op, err: denied }] : [], 2, now);
    expect(refused.create).toEqual([]);
    const ready = refused.status.conditions?.find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({ status: 'False', reason: OPERATION_REFUSED, observedGeneration: 2 });
    expect(ready?.message).toContain(`creating Operation ${op?.metadata.name}`);
    expect(ready?.message).toContain('may not backup');
    expect(refused.status.active).toBeUndefined();
    expect(refused.status.lastScheduleTime).toBe('2025-06-01T01:00:00Z');
    expect(refused.status.missedSlots).toEqual([
      {
        scheduledTime: '2025-06-01T01:00:00Z',
        detectedAt: '2025-06-01T01:00:10Z',
        reason: OPERATION_REFUSED,
      },
    ]);
    expect(refused.status.nextScheduleTime).toBe('2025-06-01T02:00:00Z');
    expect(refused.events.map((e) => `${e.type}/${e.reason}`)).toEqual([`Warning/${OPERATION_REFUSED}`]);

    // Later reconciles that create nothing keep saying so; the next created Operation clears it.
    const quiet = decideCron({ ...cron(), status: refused.status }, [], new Date('2025-06-01T01:30:00Z'));
    expect(quiet.create).toEqual([]);
    expect(quiet.status.conditions?.find((c) => c.type === 'Ready')?.reason).toBe(OPERATION_REFUSED);
    const next = decideCron({ ...cron(), status: refused.status }, [], new Date('2025-06-01T02:00:05Z'));
    expect(next.create).toHaveLength(1);
    expect(next.status.conditions?.find((c) => c.type === 'Ready')?.reason).toBe('ScheduleActive');
  });

  it('keepRefusal gives way to a False state that says more (Suspended)', () => {
    const refusedCond: Condition = {
      type: 'Ready',
      status: 'False',
      reason: OPERATION_REFUSED,
      message: 'm',
      lastTransitionTime: 't',
    };
    const suspended: Condition[] = [{ ...refusedCond, reason: 'Suspended' }];
    expect(keepRefusal([refusedCond], suspended, false)).toEqual(suspended);
    const active: Condition[] = [{ ...refusedCond, status: 'True', reason: 'ScheduleActive' }];
    expect(keepRefusal([refusedCond], active, false)).toEqual([refusedCond]);
    expect(keepRefusal([refusedCond], active, true)).toEqual(active);
  });
});
