import { describe, expect, it } from 'vitest';
import { anInstance, cronOp } from '../../../test/support/builders/schedule.ts';
import {
  ANNOTATION_ACTS_FOR,
  ANNOTATION_EDITED_BY,
  ANNOTATION_SCHEDULED_TIME,
  LABEL_CRON_OPERATION,
} from '../api/index.ts';
import { operationForSlot } from '../schedule/cron-decide.ts';
import { parseArgs } from './args.ts';
import { backfillOperation, backfillSlots, backfillTargets, MAX_BACKFILL_SLOTS } from './backfill.ts';

const NOW = new Date('2025-06-10T00:00:00Z');
const iso = (d: Date) => d.toISOString();

describe('backfill', () => {
  it('lists the slots in [from, to], both ends included, in the schedule’s zone', () => {
    const cron = cronOp({ schedule: '30 2 * * *', timeZone: 'Europe/Berlin' });
    const got = backfillSlots(cron, new Date('2025-06-01T00:30:00Z'), new Date('2025-06-03T00:30:00Z'), NOW);
    expect(got.ok && got.slots.map(iso)).toEqual([
      '2025-06-01T00:30:00.000Z',
      '2025-06-02T00:30:00.000Z',
      '2025-06-03T00:30:00.000Z',
    ]);
  });

  it('refuses a range of more than the bound, saying where to cut it', () => {
    const cron = cronOp({ schedule: '0 * * * *' });
    const got = backfillSlots(cron, new Date('2025-06-01T00:00:00Z'), new Date('2025-06-08T00:00:00Z'), NOW);
    expect(got).toEqual({
      ok: false,
      message: `the range holds more than ${MAX_BACKFILL_SLOTS} slots of "0 * * * *" (UTC); backfill at most ${MAX_BACKFILL_SLOTS} at a time: use --to 2025-06-03T01:00:00Z, then continue from --from 2025-06-03T02:00:00Z`,
    });
    const exactly = backfillSlots(
      cron,
      new Date('2025-06-01T00:00:00Z'),
      new Date('2025-06-03T01:00:00Z'),
      NOW,
    );
    expect(exactly.ok && exactly.slots).toHaveLength(MAX_BACKFILL_SLOTS);
  });

  it('refuses a range reaching into the future or upside down', () => {
    const cron = cronOp();
    expect(
      backfillSlots(cron, new Date('2025-06-09T00:00:00Z'), new Date('2025-06-11T00:00:00Z'), NOW),
    ).toMatchObject({
      ok: false,
      message: expect.stringContaining('--to 2025-06-11T00:00:00Z is in the future'),
    });
    expect(
      backfillSlots(cron, new Date('2025-06-09T00:00:00Z'), new Date('2025-06-08T00:00:00Z'), NOW),
    ).toEqual({
      ok: false,
      message: '--from is after --to',
    });
  });

  it('creates what the schedule creates for the slot, under the same name, without the operator’s own marks', () => {
    const cron = cronOp({}, { [ANNOTATION_EDITED_BY]: 'alice' });
    const slot = new Date('2025-06-01T05:00:00Z');
    const scheduled = operationForSlot(cron, slot);
    const op = backfillOperation(cron, slot, 'shop');
    expect(op.metadata.name).toBe(scheduled.metadata.name);
    expect(op.metadata.name).toBe(`nightly-${slot.getTime() / 60_000}`);
    expect(op.spec).toEqual(scheduled.spec);
    expect(op.metadata.labels?.[LABEL_CRON_OPERATION]).toBe('nightly');
    expect(op.metadata.annotations?.[ANNOTATION_SCHEDULED_TIME]).toBe('2025-06-01T05:00:00Z');
    expect(scheduled.metadata.ownerReferences).toHaveLength(1);
    expect(scheduled.metadata.annotations?.[ANNOTATION_ACTS_FOR]).toBeDefined();
    expect(op.metadata.ownerReferences).toBeUndefined();
    expect(op.metadata.annotations?.[ANNOTATION_ACTS_FOR]).toBeUndefined();
  });

  it('targets the fixed instance, or the instances the selector matches', () => {
    expect(backfillTargets(cronOp(), [])).toEqual(['shop']);
    const fleet = cronOp({
      targetSelector: { matchLabels: { tier: 'prod' } },
      operationTemplate: { spec: { type: 'Backup', engine: 'velero' } },
    });
    const instances = [anInstance('b', { tier: 'prod' }), anInstance('a', { tier: 'prod' }), anInstance('c')];
    expect(backfillTargets(fleet, instances)).toEqual(['a', 'b']);
  });

  it('parses `backfill cronoperation <name>` and `backfill cronop/<name>`, with RFC 3339 times', () => {
    const want = {
      ok: true,
      globals: { allNamespaces: false },
      command: {
        cmd: 'backfill',
        name: 'nightly',
        from: new Date('2025-06-01T00:00:00Z'),
        to: new Date('2025-06-01T02:00:00Z'),
      },
    };
    expect(
      parseArgs([
        'backfill',
        'cronoperation',
        'nightly',
        '--from',
        '2025-06-01T00:00:00Z',
        '--to',
        '2025-06-01T04:00:00+02:00',
      ]),
    ).toEqual(want);
    expect(
      parseArgs(['backfill', 'cronop/nightly', '--from=2025-06-01T00:00:00Z', '--to=2025-06-01T02:00:00Z']),
    ).toEqual(want);
    expect(
      parseArgs(['backfill', 'cronop/nightly', '--from', 'yesterday', '--to', '2025-06-01T02:00:00Z']),
    ).toMatchObject({
      ok: false,
      message: expect.stringContaining('--from "yesterday" is not an RFC 3339 time with a zone'),
    });
    expect(parseArgs(['backfill', 'cronop/nightly', '--from', '2025-06-01T00:00:00Z'])).toMatchObject({
      ok: false,
      message: expect.stringContaining('--to <RFC 3339 time> is required'),
    });
  });
});
