// spec.source at admission (source.ts): a Restore of the namespace's own backups needs only `restore` on
// the target (which may be gone); another namespace's is a clone, for a requester with `clone` there.
import { describe, expect, it } from 'vitest';
import { anOperation, aRequest, causesOf, someFacts } from '../../../test/support/builders/admission.ts';
import { BUILTIN_TEMPLATES } from '../catalog/index.ts';
import { ANNOTATION_CREATED_BY } from './approval.ts';
import type { AccessCheck } from './decision.ts';
import { decideOperation, operationNeeds } from './operation.ts';

const restore = (source: string | undefined, spec: Record<string, unknown> = {}) =>
  anOperation(
    { type: 'Restore', engine: 'velero', ...(source ? { source: { namespace: source } } : {}), ...spec },
    { [ANNOTATION_CREATED_BY]: 'alice' },
  );
const CLONE: AccessCheck = { verb: 'clone', name: 'shop', namespace: 'shop-prod' };
const gone = { ok: true as const, value: undefined };
const checks = [{ verb: 'restore', name: 'shop' }, CLONE];
/** Facts where the requester may `restore` here, and `clone` in shop-prod only if `clone`. */
const facts = (clone: boolean, target = gone) =>
  someFacts({
    target,
    checks,
    allow: (c) => ({ ok: true, value: { allowed: c.verb === 'restore' || (c.verb === 'clone' && clone) } }),
  });

describe('spec.source', () => {
  it('its own namespace: admitted with the target gone, on the restore verb alone', () => {
    const req = aRequest(restore('team-a'));
    expect(operationNeeds(req)).toEqual({ target: 'shop', access: [{ verb: 'restore', name: 'shop' }] });
    expect(decideOperation(req, facts(false))).toEqual({ uid: 'uid-1', allowed: true });
    // Without spec.source a Restore still needs its instance.
    expect(
      causesOf(
        decideOperation(aRequest(restore(undefined, { parameters: { backupName: 'b' } })), facts(false)),
      ),
    ).toEqual([
      {
        field: 'spec.targetRef.name',
        message: expect.stringContaining('does not exist in namespace team-a'),
      },
    ]);
  });

  it('another namespace: reviews clone there, and refuses a requester without it (403 at the field)', () => {
    const req = aRequest(restore('shop-prod'));
    expect(operationNeeds(req).access).toEqual([{ verb: 'restore', name: 'shop' }, CLONE]);
    expect(decideOperation(req, facts(true))).toEqual({ uid: 'uid-1', allowed: true });
    const refused = decideOperation(req, facts(false));
    expect(refused.status?.code).toBe(403);
    expect(causesOf(refused)).toEqual([
      {
        field: 'spec.source.namespace',
        message: expect.stringContaining(
          'user "alice" may not clone applicationinstances.apps.vworkspace.io/shop in namespace shop-prod',
        ),
      },
    ]);
  });

  it('a template that does not allow clones refuses them whatever the RBAC', () => {
    const noClones = BUILTIN_TEMPLATES.map((t) =>
      t.name === 'velero-restore' ? { ...t, allowClone: false } : t,
    );
    const res = decideOperation(aRequest(restore('shop-prod')), {
      ...facts(true),
      templates: { ok: true, value: noClones },
    });
    expect(causesOf(res)).toEqual([
      { field: 'spec.source.namespace', message: expect.stringContaining('allowClone is not true') },
    ]);
  });

  it('is for a velero Restore only', () => {
    const backup = anOperation({ source: { namespace: 'team-a' } }, { [ANNOTATION_CREATED_BY]: 'alice' });
    expect(causesOf(decideOperation(aRequest(backup), someFacts()))).toEqual([
      { field: 'spec.source', message: 'Forbidden: spec.source is for a Restore only: leave it out' },
    ]);
    const volsync = restore('team-a', { engine: 'volsync', parameters: { repository: 'repo' } });
    // (Its repository Secret is checked too, at spec.parameters.repository: repository-access.test.ts.)
    expect(
      causesOf(decideOperation(aRequest(volsync), facts(false))).filter((c) => c.field === 'spec.source'),
    ).toEqual([{ field: 'spec.source', message: expect.stringContaining('needs engine velero') }]);
    expect(causesOf(decideOperation(aRequest(restore('Not_A_Namespace')), facts(false)))).toContainEqual({
      field: 'spec.source.namespace',
      message: expect.stringContaining('must be the name of the namespace'),
    });
  });
});
