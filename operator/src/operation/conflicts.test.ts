import { describe, expect, it } from 'vitest';
import { operation, withPhase } from '../../../test/support/builders/operation.ts';
import { OPERATION_TYPES } from '../api/enums.ts';
import { findConflicts, typesConflict, waitingQueue } from './conflicts.ts';

const at = (min: number) => `2025-01-01T00:${String(min).padStart(2, '0')}:00Z`;

describe('typesConflict', () => {
  it('destructive verbs conflict with everything, Backup with Backup, RunCommand/Runbook/Verify only with destructive', () => {
    const table = Object.fromEntries(
      OPERATION_TYPES.map((a) => [a, OPERATION_TYPES.filter((b) => typesConflict(a, b))]),
    );
    expect(table).toEqual({
      Backup: ['Backup', 'Restore', 'Upgrade', 'Migration'],
      Restore: [...OPERATION_TYPES],
      Upgrade: [...OPERATION_TYPES],
      Migration: [...OPERATION_TYPES],
      RunCommand: ['Restore', 'Upgrade', 'Migration'],
      Runbook: ['Restore', 'Upgrade', 'Migration'],
      // A drill reads a backup into a namespace of its own: only what changes the instance holds it back.
      Verify: ['Restore', 'Upgrade', 'Migration'],
    });
  });

  it('is symmetric', () => {
    for (const a of OPERATION_TYPES)
      for (const b of OPERATION_TYPES) expect(typesConflict(a, b)).toBe(typesConflict(b, a));
  });
});

describe('findConflicts', () => {
  it('a running conflicting Operation blocks; other targets, namespaces, terminal ones do not', () => {
    const me = operation('b2', { type: 'Backup' }, { created: at(5) });
    const others = [
      withPhase(operation('b1', { type: 'Backup' }, { created: at(1) }), 'Running'),
      withPhase(
        operation('x', { type: 'Restore', targetRef: { name: 'other' } }, { created: at(1) }),
        'Running',
      ),
      withPhase(operation('y', { type: 'Restore' }, { created: at(1), namespace: 'elsewhere' }), 'Running'),
      withPhase(operation('z', { type: 'Upgrade' }, { created: at(1) }), 'Succeeded'),
      withPhase(operation('rc', { type: 'RunCommand', engine: 'job' }, { created: at(1) }), 'Running'),
    ];
    expect(findConflicts(me, others)).toEqual({ running: ['b1'], ahead: [], queuePosition: 1 });
  });

  it('FIFO: earlier waiting conflicting Operations are ahead; queue position counts them', () => {
    const ops = [
      withPhase(operation('r1', { type: 'Restore' }, { created: at(1) }), 'Running'),
      withPhase(operation('u2', { type: 'Upgrade' }, { created: at(2) }), 'Blocked', 'ConflictingOperation'),
      operation('b3', { type: 'Backup' }, { created: at(3) }), // not evaluated yet
      withPhase(operation('a4', { type: 'Restore' }, { created: at(4) }), 'Blocked', 'AwaitingApproval'),
    ];
    const me = operation('b5', { type: 'Backup' }, { created: at(5) });
    expect(findConflicts(me, ops)).toEqual({ running: ['r1'], ahead: ['u2', 'b3'], queuePosition: 3 });
    // Same creation time: name breaks the tie.
    const tie = operation('b0', { type: 'Backup' }, { created: at(3) });
    expect(findConflicts(tie, ops).ahead).toEqual(['u2']);
  });

  it('one waiting for approval does not hold the queue', () => {
    const ops = [
      withPhase(operation('r1', { type: 'Restore' }, { created: at(1) }), 'Blocked', 'AwaitingApproval'),
    ];
    expect(findConflicts(operation('b2', {}, { created: at(2) }), ops)).toEqual({
      running: [],
      ahead: [],
      queuePosition: 1,
    });
  });

  it('waitingQueue lists the not-started, non-terminal Operations of a target in order', () => {
    const ops = [
      withPhase(operation('c', {}, { created: at(3) }), 'Blocked', 'ConflictingOperation'),
      withPhase(operation('a', {}, { created: at(1) }), 'Running'),
      operation('b', {}, { created: at(2) }),
      withPhase(operation('d', {}, { created: at(0) }), 'Failed'),
    ];
    expect(waitingQueue(ops, 'team', 'app').map((o) => o.metadata.name)).toEqual(['b', 'c']);
  });
});
