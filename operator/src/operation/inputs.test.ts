import { describe, expect, it } from 'vitest';
import { operation, ran } from '../../../test/support/builders/operation.ts';
import { BUILTIN_TEMPLATES } from '../catalog/templates/index.ts';
import { resolveInputs } from './inputs.ts';

const NOW = new Date('2025-01-01T12:00:00Z');
const restoreTemplate = BUILTIN_TEMPLATES.find((t) => t.name === 'velero-restore')!;
const restore = (spec = {}) => operation('r', { type: 'Restore', engine: 'velero', ...spec });
const backup = (
  name: string,
  startedAt: string,
  phase: Parameters<typeof ran>[1] = 'Succeeded',
  extra = {},
) => ran(operation(name), phase, { startedAt, outputs: { backupName: `${name}-x` }, ...extra });

describe('resolveInputs', () => {
  it('the template default reads backupName from the latest real velero Backup success on the target', () => {
    const ops = [
      backup('old', '2025-01-01T08:00:00Z'),
      backup('new', '2025-01-01T10:00:00Z'),
      backup('failed', '2025-01-01T11:00:00Z', 'Failed'),
      backup('dry', '2025-01-01T11:30:00Z', 'Succeeded', { reason: 'DryRunCompleted' }),
      ran(operation('snap', { engine: 'snapshot' }), 'Succeeded', { startedAt: '2025-01-01T11:40:00Z' }),
      ran(operation('other', { targetRef: { name: 'else' } }), 'Succeeded', {
        startedAt: '2025-01-01T11:50:00Z',
        outputs: { backupName: 'else-x' },
      }),
    ];
    const r = resolveInputs(restore(), restoreTemplate, ops, NOW);
    expect(r).toEqual({
      outcome: 'resolved',
      fresh: true,
      parameters: { backupName: 'new-x' },
      records: [
        {
          from: 'template velero-restore parametersFrom[0]',
          operation: 'new',
          uid: 'uid-new',
          type: 'Backup',
          engine: 'velero',
          startedAt: '2025-01-01T10:00:00Z',
          finishedAt: '2025-01-01T10:00:00Z',
          parameters: { backupName: 'new-x' },
          resolvedAt: '2025-01-01T12:00:00Z',
        },
      ],
    });
  });

  it('resolves once: a recorded status.inputs wins over newer Operations', () => {
    const first = resolveInputs(restore(), restoreTemplate, [backup('a', '2025-01-01T09:00:00Z')], NOW);
    if (first.outcome !== 'resolved') throw new Error(first.outcome);
    const recorded = { ...restore(), status: { inputs: first.records } };
    const again = resolveInputs(recorded, restoreTemplate, [backup('b', '2025-01-01T11:00:00Z')], NOW);
    expect(again).toMatchObject({ outcome: 'resolved', fresh: false, parameters: { backupName: 'a-x' } });
  });

  it('no source when the parameter is set; waits while the only candidate runs; unusable when there is none', () => {
    expect(resolveInputs(restore({ parameters: { backupName: 'x' } }), restoreTemplate, [], NOW)).toEqual({
      outcome: 'none',
    });
    expect(
      resolveInputs(restore(), restoreTemplate, [backup('b', '2025-01-01T11:00:00Z', 'Running')], NOW),
    ).toEqual({
      outcome: 'waiting',
      message: expect.stringContaining('waits for b (Running)'),
    });
    const none = resolveInputs(restore(), restoreTemplate, [], NOW);
    expect(none).toMatchObject({ outcome: 'unavailable' });
    if (none.outcome === 'unavailable') {
      expect(none.message).toContain('no Backup (engine velero) Operation on app has Succeeded yet');
      expect(none.message).toContain('set spec.parameters.backupName on a new Operation instead');
    }
  });

  it('operationRef: waits while it runs, refuses failed, dry-run, missing, self, and a missing output', () => {
    const ref = (name: string, output = 'backupName') =>
      restore({
        parametersFrom: [{ operationRef: { name }, outputs: [{ output, parameter: 'backupName' }] }],
      });
    const at = '2025-01-01T09:00:00Z';
    expect(resolveInputs(ref('b'), restoreTemplate, [backup('b', at, 'Running')], NOW)).toMatchObject({
      outcome: 'waiting',
    });
    expect(resolveInputs(ref('b'), restoreTemplate, [backup('b', at)], NOW)).toMatchObject({
      outcome: 'resolved',
      parameters: { backupName: 'b-x' },
      records: [{ from: 'spec.parametersFrom[0]', operation: 'b' }],
    });
    const unusable = (op: ReturnType<typeof ref>, ops: Parameters<typeof resolveInputs>[2], text: string) => {
      const r = resolveInputs(op, restoreTemplate, ops, NOW);
      expect(r.outcome).toBe('unavailable');
      if (r.outcome === 'unavailable') expect(r.message).toContain(text);
    };
    unusable(ref('b'), [backup('b', at, 'Failed')], 'ended Failed: it has no outputs to read');
    unusable(ref('b'), [backup('b', at, 'Succeeded', { reason: 'DryRunCompleted' })], 'was a dry run');
    unusable(ref('b'), [], 'does not exist in namespace team');
    unusable(ref('r'), [], 'is this Operation');
    unusable(ref('b', 'jobName'), [backup('b', at)], 'has no output jobName (it has backupName)');
  });
});
