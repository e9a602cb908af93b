// Maintenance windows on the real API server, the Operation reconciler on a FakeClock the test moves:
// outside its window an Operation is Blocked/OutsideMaintenanceWindow, and the reconciler requeues itself
// for the exact opening (no polling), so moving the clock to that instant is what starts it. A template's
// expectedDuration keeps it from starting in a window's last minutes.

import { FakeClock } from '@vworkspace/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import type { Catalog } from '../../../operator/src/catalog/catalog-schema.ts';
import type { MaintenanceWindow, Template } from '../../../operator/src/catalog/template.ts';
import { BUILTIN_TEMPLATES } from '../../../operator/src/catalog/templates/index.ts';
import { fakeAdapter } from '../../support/builders/operation.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';
import { Api, cond, eventually, FAKE_TEMPLATES, type RunningController, startController } from './support.ts';

const MINUTE = 60_000;
/** Daily at 12:00 UTC. */
const NOON = (duration: string): MaintenanceWindow => ({ schedule: '0 12 * * *', duration, timeZone: 'UTC' });
const at = (iso: string) => Date.parse(iso);
/** The fake Backup template under another name, with `extra` (a window, an expected duration). */
const backupTemplate = (name: string, extra: Partial<Template>): Template => ({
  ...FAKE_TEMPLATES.find((t) => t.type === 'Backup')!,
  name,
  ...extra,
});

describe('maintenance windows (Operation reconciler on a FakeClock)', () => {
  const kc = adminKubeConfig();
  const api = new Api(kc);
  const stops: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const s of stops.splice(0)) await s();
  });

  /** The reconciler on `clock` with the test templates plus `templates`, and the catalog `applications`. */
  const start = (clock: FakeClock, templates: Template[], applications: Catalog['applications'] = {}) => {
    const fake = fakeAdapter('workflow');
    const all = [...BUILTIN_TEMPLATES, ...FAKE_TEMPLATES, ...templates];
    const ctl = startController(kc, (e) => (e === 'workflow' ? fake : undefined), {
      clock,
      templates: { templates: () => all, catalog: () => ({ applications, templates: [] }) },
    });
    stops.push(() => ctl.stop());
    return ctl;
  };
  const phase = (ns: string, name: string, want: string) => async () => {
    const op = await api.getOperation(ns, name);
    return op.status?.phase === want ? op : undefined;
  };
  const childrenOf = async (ns: string, name: string) =>
    (await api.configMaps(ns)).filter((c) => c.metadata?.ownerReferences?.[0]?.name === name);
  /**
   * Blocked/OutsideMaintenanceWindow with the reconciler's requeue of this Operation set for exactly
   * `opening`; no child. The wake-up is checked on the work queue's entry for the Operation's key, not
   * on the clock's earliest timer: earlier files' Operations (same API server) are reconciled by this
   * controller too and their retries are timers on the same clock.
   */
  const blockedUntil = async (ctl: RunningController, ns: string, name: string, opening: number) => {
    const op = await eventually('Blocked', phase(ns, name, 'Blocked'));
    expect(cond(op, 'Blocked')).toMatchObject({ status: 'True', reason: 'OutsideMaintenanceWindow' });
    expect(cond(op, 'Blocked')?.message).toContain(
      `opens at ${new Date(opening).toISOString().replace('.000Z', 'Z')}`,
    );
    expect(await childrenOf(ns, name)).toEqual([]);
    // The wake-up is one requeue at the opening, and nothing for this key is due before it: a
    // delayed add keeps the earlier of two deadlines, so a polling requeue would show here.
    await eventually('requeue at the opening', () => ctl.controller.queue.dueAt(`${ns}/${name}`) === opening);
    return op;
  };

  it("outside the template's window: Blocked, and started by the timer at the window's exact opening", async () => {
    const ns = await createNamespace(kc, 'window');
    const clock = new FakeClock(at('2030-06-03T10:00:00Z'));
    const ctl = start(clock, [backupTemplate('noon-backup', { maintenanceWindow: NOON('2h') })]);
    await api.createInstance(ns, 'app', { backup: 'workflow' }, true);
    await api.createOperation(ns, 'nightly', { template: 'noon-backup' });

    const opening = at('2030-06-03T12:00:00Z');
    await blockedUntil(ctl, ns, 'nightly', opening);
    // A millisecond before the opening nothing fires; at the opening the requeue starts it.
    await clock.advance(opening - 1 - clock.now());
    expect((await api.getOperation(ns, 'nightly')).status?.phase).toBe('Blocked');
    expect(ctl.controller.queue.dueAt(`${ns}/nightly`)).toBe(opening);
    await clock.advance(1);
    const running = await eventually('Running', phase(ns, 'nightly', 'Running'));
    expect(running.status?.startedAt).toBe('2030-06-03T12:00:00Z');
    expect(cond(running, 'Blocked')).toMatchObject({ status: 'False', reason: 'PreconditionsSatisfied' });
    expect(await childrenOf(ns, 'nightly')).toHaveLength(1);
  });

  it("not started in the application window's last minutes when the template's expectedDuration is longer than what is left", async () => {
    const ns = await createNamespace(kc, 'window');
    // 30 minutes into the catalog application's 12:00–13:00 window: 30 minutes are left.
    const clock = new FakeClock(at('2030-06-03T12:30:00Z'));
    const ctl = start(clock, [backupTemplate('long-backup', { expectedDuration: '45m' })], {
      demo: { maintenanceWindow: NOON('1h'), source: 'test' },
    });
    await api.createInstance(ns, 'big', { backup: 'workflow' }, true);
    await api.createInstance(ns, 'small', { backup: 'workflow' }, true);
    await api.createOperation(ns, 'long', { template: 'long-backup', targetRef: { name: 'big' } });
    await api.createOperation(ns, 'quick', { template: 'fake-backup', targetRef: { name: 'small' } });

    // Without an expected duration, the same window lets it start now.
    const quick = await eventually('quick Running', phase(ns, 'quick', 'Running'));
    expect(quick.status?.startedAt).toBe('2030-06-03T12:30:00Z');
    const tomorrow = at('2030-06-04T12:00:00Z');
    const long = await blockedUntil(ctl, ns, 'long', tomorrow);
    expect(cond(long, 'Blocked')?.message).toContain(
      'only 30m is left in the maintenance window of the catalog application (0 12 * * * UTC, 1h) (it closes at 2030-06-03T13:00:00Z) and template long-backup expects a run to take 45m',
    );

    // Past the close it still waits for tomorrow's opening, and starts exactly then.
    await clock.advance(45 * MINUTE);
    expect((await api.getOperation(ns, 'long')).status?.phase).toBe('Blocked');
    expect(ctl.controller.queue.dueAt(`${ns}/long`)).toBe(tomorrow);
    await clock.advance(tomorrow - clock.now());
    const running = await eventually('long Running', phase(ns, 'long', 'Running'));
    expect(running.status?.startedAt).toBe('2030-06-04T12:00:00Z');
    expect(await childrenOf(ns, 'long')).toHaveLength(1);
  });
});
