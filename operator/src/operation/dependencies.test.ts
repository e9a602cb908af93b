import { describe, expect, it } from 'vitest';
import { operation, ran } from '../../../test/support/builders/operation.ts';
import type { Template } from '../catalog/template.ts';
import { checkDependencies } from './dependencies.ts';

const NOW = new Date('2025-01-01T12:00:00Z');
const template: Pick<Template, 'name' | 'dependencies'> = {
  name: 'guarded-upgrade',
  dependencies: [{ type: 'Backup', engine: 'velero', maxAge: '1h' }],
};
const upgrade = operation('u', { type: 'Upgrade', engine: 'helm' });
const backup = (name: string, startedAt: string, phase: Parameters<typeof ran>[1] = 'Succeeded') =>
  ran(operation(name), phase, { startedAt });

describe('checkDependencies', () => {
  it('holds with a real success started within maxAge on the same target', () => {
    expect(checkDependencies(upgrade, template, [backup('b', '2025-01-01T11:30:00Z')], NOW)).toEqual({
      ok: true,
    });
    expect(checkDependencies(upgrade, { name: 't' }, [], NOW)).toEqual({ ok: true });
  });

  it('says what to run when there is none, or the latest is too old', () => {
    expect(checkDependencies(upgrade, template, [], NOW)).toEqual({
      ok: false,
      message:
        'template guarded-upgrade needs a Succeeded Backup (engine velero) of app started within the last 1h: there is none; run one (an Operation with type: Backup, engine: velero, targetRef.name: app); this Operation starts when it succeeds',
    });
    const old = checkDependencies(upgrade, template, [backup('b', '2025-01-01T09:30:00Z')], NOW);
    expect(old).toMatchObject({
      ok: false,
      message: expect.stringContaining('the latest, b, started 2h30m ago; run one'),
    });
  });

  it('waits for one under way; other targets, types and failures do not count', () => {
    const ops = [
      backup('running', '2025-01-01T11:59:00Z', 'Running'),
      backup('failed', '2025-01-01T11:50:00Z', 'Failed'),
      ran(operation('elsewhere', { targetRef: { name: 'other' } }), 'Succeeded', {
        startedAt: '2025-01-01T11:55:00Z',
      }),
      ran(operation('vs', { engine: 'volsync' }), 'Succeeded', { startedAt: '2025-01-01T11:55:00Z' }),
    ];
    expect(checkDependencies(upgrade, template, ops, NOW)).toMatchObject({
      ok: false,
      message: expect.stringMatching(/there is none; waits for running \(Running\)$/),
    });
  });

  it('does not count a success whose product already expired by its own ttl (a Backup kept 1s)', () => {
    const fleeting = ran(operation('b', { parameters: { ttl: '1s' } }), 'Succeeded', {
      startedAt: '2025-01-01T11:30:00Z',
    });
    expect(checkDependencies(upgrade, template, [fleeting], NOW)).toMatchObject({
      ok: false,
      message: expect.stringContaining('what it made expired 2025-01-01T11:30:01Z (its parameters.ttl)'),
    });
    const kept = ran(operation('k', { parameters: { ttl: '24h' } }), 'Succeeded', {
      startedAt: '2025-01-01T11:30:00Z',
    });
    expect(checkDependencies(upgrade, template, [kept], NOW)).toEqual({ ok: true });
  });
});
