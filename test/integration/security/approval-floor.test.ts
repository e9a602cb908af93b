// Item 3 of the threat model: template policy is a floor. A requester may ask for approval but never waive
// what the template requires (approval, separation of duties); retries, deadlines and TTLs stay defaults an
// Operation may override (operator/src/catalog/policy.ts says why). The webhook refuses the loosening at its
// field path; the reconciler enforces the template's floor anyway, for Operations admitted while the
// webhook was not there to judge them.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { jobRunCommand, RUNCOMMAND_IMAGES } from '../../../operator/src/catalog/templates/job-runcommand.ts';
import { startWorld, type World } from './harness.ts';
import { unselected } from './support.ts';

const TEMPLATE = 'guarded-runcommand';
const catalog = YAML.stringify({
  templates: [
    {
      ...jobRunCommand,
      name: TEMPLATE,
      defaults: { requireReady: false, retryLimit: 1, activeDeadlineSeconds: 600, requiresApproval: true },
      separationOfDuties: true,
    },
  ],
});

const spec = (policy?: Record<string, unknown>) => ({
  type: 'RunCommand',
  engine: 'job',
  template: TEMPLATE,
  targetRef: { name: 'shop' },
  parameters: { image: RUNCOMMAND_IMAGES[0], command: ['true'] },
  ...(policy ? { policy } : {}),
});

describe('approval floor: an Operation may tighten its template policy, never loosen it', () => {
  let w: World;
  beforeAll(async () => {
    w = await startWorld({ catalog });
    for (const ns of w.namespaces) {
      await w.instance(ns, 'shop', { runcommand: 'job' });
      await w.grantProfile('runCommand.job', ns);
      await w.grant('alice', ns, [
        { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
        { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['runcommand'] },
      ]);
    }
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('refuses requiresApproval: false against a template that requires approval, at spec.policy.requiresApproval', async () => {
    const [a] = w.namespaces;
    const alice = w.as('alice');
    // The template arrives through the catalog informer: wait until the webhook knows it.
    const d = await w.waitFor('the webhook to judge with the catalog template', async () => {
      const r = await w.denial(w.operation(alice, a, 'skip-approval', spec({ requiresApproval: false })));
      return r.message.includes('not loaded') || r.message.includes('does not exist') ? undefined : r;
    });
    expect(d.causes.map((c) => c.field)).toEqual(['spec.policy.requiresApproval']);
    expect(d.message).toContain(`template ${TEMPLATE}`);
    expect(d.message).toMatch(/requires approval/);
  });

  it('admits a tightening (lower limits, approval asked for explicitly); it waits for approval', async () => {
    const [a] = w.namespaces;
    await w.operation(
      w.as('alice'),
      a,
      'tight',
      spec({ requiresApproval: true, retryLimit: 0, activeDeadlineSeconds: 60 }),
    );
    const op = await w.waitFor('tight to wait for approval', async () => {
      const o = await w.getOperation(a, 'tight');
      const blocked = o.status?.conditions?.find((c) => c.type === 'Blocked');
      return blocked?.reason === 'AwaitingApproval' ? o : undefined;
    });
    expect(op.status?.childRef).toBeUndefined();
  });

  it('runs nothing of an Operation stored while the webhook was away (NotAdmitted, ADR 0029); the floor stays in effectivePolicy', async () => {
    const [, b] = w.namespaces;
    // The webhooks judge only namespaces carrying the world label: without it, b is a namespace whose
    // webhook is down (failurePolicy aside), and the Operation reaches the operator unjudged.
    const name = 'unjudged';
    await unselected(w, b, () =>
      w.operation(w.admin, b, name, spec({ requiresApproval: false, retryLimit: 5 })),
    );
    // Before ADR 0029 it waited Blocked/AwaitingApproval (the floor); now nothing unadmitted runs at all.
    const op = await w.waitFor(`${name} to be refused by the reconciler`, async () => {
      const o = await w.getOperation(b, name);
      return o.status?.phase === 'Failed' ? o : undefined;
    });
    const accepted = op.status?.conditions?.find((c) => c.type === 'Accepted');
    expect(accepted).toMatchObject({ status: 'False', reason: 'NotAdmitted' });
    expect(op.status?.childRef).toBeUndefined();
  });
});
