import { describe, expect, it } from 'vitest';
import {
  anOperation,
  aRequest,
  aTarget,
  causesOf,
  decodePatch,
  fieldsOf,
  someFacts,
} from '../../../test/support/builders/admission.ts';
import { aTemplate } from '../../../test/support/builders/catalog.ts';
import { BUILTIN_TEMPLATES } from '../catalog/index.ts';
import { ANNOTATION_CREATED_BY } from './approval.ts';
import {
  decideOperation,
  MUTATING_OPERATION_WEBHOOK,
  mutateOperation,
  operationNeeds,
  readOperation,
} from './operation.ts';

const APPROVE = 'ops.vworkspace.io/approve';
const APPROVED_BY = 'ops.vworkspace.io/approved-by';
const created = { [ANNOTATION_CREATED_BY]: 'alice' };

/** An Operation as the validating webhook sees it after the mutating one stamped created-by. */
const stamped = (spec: Record<string, unknown> = {}, extra: Record<string, string> = {}) =>
  anOperation(spec, { ...created, ...extra });

describe('decideOperation CREATE', () => {
  it('admits a valid Backup', () => {
    const res = decideOperation(aRequest(stamped({ parameters: { ttl: '24h' } })), someFacts());
    expect(res).toEqual({ uid: 'uid-1', allowed: true });
  });

  it('asks for the target and the type verb on it', () => {
    expect(operationNeeds(aRequest(stamped()))).toEqual({
      target: 'shop',
      access: [{ verb: 'backup', name: 'shop' }],
    });
  });

  it('reports shape errors at their paths', () => {
    const res = decideOperation(
      aRequest(anOperation({ type: 'Frobnicate', engine: 7, targetRef: { name: 'Not_A_Label' } }, created)),
      someFacts(),
    );
    expect(res.status?.code).toBe(422);
    expect(fieldsOf(res)).toEqual(['spec.type', 'spec.engine', 'spec.targetRef.name']);
    expect(causesOf(res)[0]?.message).toContain('supported values: Backup, Restore');
  });

  it('refuses an engine that cannot run the type', () => {
    const res = decideOperation(aRequest(stamped({ type: 'Upgrade', engine: 'velero' })), someFacts());
    expect(causesOf(res)).toEqual([
      { field: 'spec.engine', message: expect.stringContaining('engine velero cannot run Upgrade') },
    ]);
  });

  it('refuses an unknown template at spec.template', () => {
    const res = decideOperation(aRequest(stamped({ template: 'nope' })), someFacts());
    expect(fieldsOf(res)).toEqual(['spec.template']);
    expect(res.status?.message).toContain('template nope does not exist');
  });

  it('refuses a type+engine without a template at spec.engine', () => {
    const templates = BUILTIN_TEMPLATES.filter((t) => t.name !== 'velero-backup');
    const res = decideOperation(
      aRequest(stamped()),
      someFacts({ templates: { ok: true, value: templates } }),
    );
    expect(fieldsOf(res)).toEqual(['spec.engine']);
    expect(res.status?.message).toContain('no template runs Backup/velero');
  });

  it('reports every parameter error with its field path', () => {
    const res = decideOperation(
      aRequest(stamped({ parameters: { ttl: 'forever', quiesce: 'maybe', bucket: 'x' } })),
      someFacts(),
    );
    expect(fieldsOf(res).sort()).toEqual([
      'spec.parameters.bucket',
      'spec.parameters.quiesce',
      'spec.parameters.ttl',
    ]);
    expect(res.status?.message).toContain('spec.parameters.quiesce: Unsupported value: "maybe"');
  });

  it('reports a missing required parameter', () => {
    const res = decideOperation(
      aRequest(stamped({ type: 'Upgrade', engine: 'helm' })),
      someFacts({
        target: { ok: true, value: aTarget({ annotations: { 'ops.vworkspace.io/upgrade': 'helm' } }) },
      }),
    );
    expect(fieldsOf(res)).toEqual(['spec.parameters.version']);
    expect(res.status?.message).toContain('Required value');
  });

  it('refuses a target that does not exist', () => {
    const res = decideOperation(aRequest(stamped()), someFacts({ target: { ok: true, value: undefined } }));
    expect(causesOf(res)).toEqual([
      {
        field: 'spec.targetRef.name',
        message: expect.stringContaining('ApplicationInstance shop does not exist in namespace team-a'),
      },
    ]);
  });

  it('refuses a target without the capability', () => {
    const res = decideOperation(
      aRequest(stamped()),
      someFacts({
        target: { ok: true, value: aTarget({ annotations: { 'ops.vworkspace.io/backup': 'volsync' } }) },
      }),
    );
    expect(fieldsOf(res)).toEqual(['spec.targetRef.name']);
    expect(res.status?.message).toContain('CapabilityMissing');
    expect(res.status?.message).toContain('ops.vworkspace.io/backup: velero');
  });

  it('refuses a target outside the template label selector', () => {
    const staging = aTemplate({
      name: 'staging-backup',
      type: 'Backup',
      engine: 'workflow',
      targetSelectors: {
        labelSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['staging'] }] },
      },
    });
    const res = decideOperation(
      aRequest(stamped({ engine: 'workflow', template: 'staging-backup' })),
      someFacts({
        templates: { ok: true, value: [...BUILTIN_TEMPLATES, staging] },
        target: {
          ok: true,
          value: aTarget({
            labels: { tier: 'prod' },
            annotations: { 'ops.vworkspace.io/backup': 'workflow' },
          }),
        },
      }),
    );
    expect(fieldsOf(res)).toEqual(['spec.targetRef.name']);
    expect(res.status?.message).toContain('SelectorMismatch');
    expect(res.status?.message).toContain('tier in (staging)');
  });

  it('refuses a requester without the type verb on the target (403)', () => {
    const res = decideOperation(
      aRequest(stamped()),
      someFacts({ allow: (c) => ({ ok: true, value: { allowed: c.verb !== 'backup' } }) }),
    );
    expect(res.status?.code).toBe(403);
    expect(fieldsOf(res)).toEqual(['spec.targetRef.name']);
    expect(res.status?.message).toContain(
      'user "alice" may not backup applicationinstances.apps.vworkspace.io/shop',
    );
  });

  it('denies with "retry" when a lookup failed, never admits', () => {
    const failedTarget = decideOperation(
      aRequest(stamped()),
      someFacts({ target: { ok: false, message: 'connection refused' } }),
    );
    expect(failedTarget.allowed).toBe(false);
    expect(failedTarget.status?.code).toBe(503);
    expect(failedTarget.status?.message).toContain('retry the request');
    const failedSar = decideOperation(
      aRequest(stamped()),
      someFacts({ allow: () => ({ ok: false, message: 'timeout' }) }),
    );
    expect(failedSar.status?.code).toBe(503);
    expect(fieldsOf(failedSar)).toEqual(['spec.targetRef.name']);
    const noCatalog = decideOperation(
      aRequest(stamped()),
      someFacts({ templates: { ok: false, message: 'not listed yet' } }),
    );
    expect(noCatalog.status?.code).toBe(503);
    expect(fieldsOf(noCatalog)).toEqual(['spec.engine']);
    const missingFact = decideOperation(aRequest(stamped()), { ...someFacts(), access: {} });
    expect(missingFact.allowed).toBe(false);
  });

  it('refuses a forged created-by or approved-by', () => {
    const forged = decideOperation(
      aRequest(anOperation({}, { [ANNOTATION_CREATED_BY]: 'bob' })),
      someFacts(),
    );
    expect(fieldsOf(forged)).toEqual([`metadata.annotations[${ANNOTATION_CREATED_BY}]`]);
    const approvedBy = decideOperation(aRequest(stamped({}, { [APPROVED_BY]: 'alice' })), someFacts());
    expect(fieldsOf(approvedBy)).toEqual([`metadata.annotations[${APPROVED_BY}]`]);
    expect(approvedBy.status?.message).toContain('cannot be set or changed by a user');
  });

  it('says a missing stamp means the mutating webhook did not run, not that the user forged it', () => {
    const res = decideOperation(aRequest(anOperation()), someFacts());
    expect(fieldsOf(res)).toEqual([`metadata.annotations[${ANNOTATION_CREATED_BY}]`]);
    expect(res.status?.message).toContain(
      `mutating admission webhook (${MUTATING_OPERATION_WEBHOOK}) did not run`,
    );
    expect(res.status?.message).not.toContain('remove it from the request');
  });

  it('refuses an approve value other than "true"', () => {
    const res = decideOperation(aRequest(stamped({}, { [APPROVE]: 'yes' })), someFacts());
    expect(fieldsOf(res)).toEqual([`metadata.annotations[${APPROVE}]`]);
  });

  it('refuses self-approval at create under separation of duties', () => {
    const sod = { ...BUILTIN_TEMPLATES.find((t) => t.name === 'velero-backup')!, separationOfDuties: true };
    const templates = [...BUILTIN_TEMPLATES.filter((t) => t.name !== 'velero-backup'), sod];
    const res = decideOperation(
      aRequest(stamped({}, { [APPROVE]: 'true', [APPROVED_BY]: 'alice' })),
      someFacts({ templates: { ok: true, value: templates } }),
    );
    expect(res.status?.code).toBe(403);
    expect(fieldsOf(res)).toEqual([`metadata.annotations[${APPROVE}]`]);
    expect(res.status?.message).toContain('requires separation of duties');
  });
});

describe('decideOperation UPDATE', () => {
  const old = stamped({ policy: { requiresApproval: true } });
  const update = (object: unknown, user = 'bob', oldObject: unknown = old) =>
    aRequest(object, { operation: 'UPDATE', oldObject, user });

  it('admits cancel', () => {
    expect(
      decideOperation(update({ ...old, spec: { ...old.spec, cancel: true } }), someFacts()).allowed,
    ).toBe(true);
  });

  it('names each changed spec field and how to proceed', () => {
    const res = decideOperation(
      update({ ...old, spec: { ...old.spec, engine: 'volsync', parameters: { ttl: '1h' } } }),
      someFacts(),
    );
    expect(fieldsOf(res)).toEqual(['spec.engine', 'spec.parameters']);
    expect(res.status?.message).toContain('is immutable after create; only spec.cancel');
  });

  it('refuses un-cancelling', () => {
    const cancelled = { ...old, spec: { ...old.spec, cancel: true } };
    const res = decideOperation(update({ ...old }, 'bob', cancelled), someFacts());
    expect(fieldsOf(res)).toEqual(['spec.cancel']);
  });

  it('admits an approval stamped with the approver and asks for the approve verb', () => {
    const approved = stamped(
      { policy: { requiresApproval: true } },
      { [APPROVE]: 'true', [APPROVED_BY]: 'bob' },
    );
    expect(operationNeeds(update(approved))).toEqual({ access: [{ verb: 'approve', name: 'shop' }] });
    expect(decideOperation(update(approved), someFacts()).allowed).toBe(true);
  });

  it('refuses an approver without the approve verb', () => {
    const approved = stamped(
      { policy: { requiresApproval: true } },
      { [APPROVE]: 'true', [APPROVED_BY]: 'bob' },
    );
    const res = decideOperation(
      update(approved),
      someFacts({ allow: (c) => ({ ok: true, value: { allowed: c.verb !== 'approve' } }) }),
    );
    expect(res.status?.code).toBe(403);
    expect(fieldsOf(res)).toEqual([`metadata.annotations[${APPROVE}]`]);
  });

  it('refuses approved-by written without approving, or rewritten later', () => {
    const forged = stamped({ policy: { requiresApproval: true } }, { [APPROVED_BY]: 'carol' });
    expect(fieldsOf(decideOperation(update(forged), someFacts()))).toEqual([
      `metadata.annotations[${APPROVED_BY}]`,
    ]);
    const approvedOld = stamped(
      { policy: { requiresApproval: true } },
      { [APPROVE]: 'true', [APPROVED_BY]: 'bob' },
    );
    const rewritten = {
      ...approvedOld,
      metadata: {
        ...approvedOld.metadata,
        annotations: { ...created, [APPROVE]: 'true', [APPROVED_BY]: 'carol' },
      },
    };
    expect(fieldsOf(decideOperation(update(rewritten, 'carol', approvedOld), someFacts()))).toEqual([
      `metadata.annotations[${APPROVED_BY}]`,
    ]);
  });

  it('refuses changing created-by', () => {
    const res = decideOperation(
      update(anOperation({ policy: { requiresApproval: true } }, { [ANNOTATION_CREATED_BY]: 'bob' })),
      someFacts(),
    );
    expect(fieldsOf(res)).toEqual([`metadata.annotations[${ANNOTATION_CREATED_BY}]`]);
  });

  it('enforces separation of duties against the recorded creator', () => {
    const sod = aTemplate({
      name: 'guarded-backup',
      type: 'Backup',
      engine: 'workflow',
      separationOfDuties: true,
    });
    const facts = someFacts({ templates: { ok: true, value: [...BUILTIN_TEMPLATES, sod] } });
    const base = stamped({ engine: 'workflow', template: 'guarded-backup' });
    const by = (user: string) => ({
      ...base,
      metadata: { ...base.metadata, annotations: { ...created, [APPROVE]: 'true', [APPROVED_BY]: user } },
    });
    const self = decideOperation(update(by('alice'), 'alice', base), facts);
    expect(self.status?.code).toBe(403);
    expect(self.status?.message).toContain('"alice" created this Operation; someone else');
    expect(decideOperation(update(by('bob'), 'bob', base), facts).allowed).toBe(true);
  });
});

describe('mutateOperation', () => {
  it('stamps created-by at create', () => {
    const res = mutateOperation(aRequest(anOperation()));
    expect(decodePatch(res)).toEqual([
      { op: 'add', path: '/metadata/annotations', value: { [ANNOTATION_CREATED_BY]: 'alice' } },
    ]);
  });

  it('stamps approved-by with the approving user', () => {
    const old = stamped();
    const res = mutateOperation(
      aRequest(stamped({}, { [APPROVE]: 'true' }), { operation: 'UPDATE', oldObject: old, user: 'bob' }),
    );
    expect(decodePatch(res)).toEqual([
      { op: 'add', path: '/metadata/annotations/ops.vworkspace.io~1approved-by', value: 'bob' },
    ]);
  });

  it('leaves a forged value alone for validation to refuse, and restores a dropped one', () => {
    const forged = mutateOperation(aRequest(anOperation({}, { [ANNOTATION_CREATED_BY]: 'bob' })));
    expect(forged.patch).toBeUndefined();
    const old = stamped({}, { [APPROVE]: 'true', [APPROVED_BY]: 'bob' });
    const replaced = mutateOperation(
      aRequest(anOperation({}, { [APPROVE]: 'true' }), {
        operation: 'UPDATE',
        oldObject: old,
        user: 'carol',
      }),
    );
    expect(decodePatch(replaced)).toEqual([
      { op: 'add', path: '/metadata/annotations/ops.vworkspace.io~1created-by', value: 'alice' },
      { op: 'add', path: '/metadata/annotations/ops.vworkspace.io~1approved-by', value: 'bob' },
    ]);
  });

  it('refuses spec changes itself, before the CRD rules answer with a terser message', () => {
    const old = stamped();
    const res = mutateOperation(
      aRequest(stamped({ engine: 'volsync' }), { operation: 'UPDATE', oldObject: old, user: 'bob' }),
    );
    expect(res.allowed).toBe(false);
    expect(fieldsOf(res)).toEqual(['spec.engine']);
  });

  it('drops approved-by when the approval is withdrawn', () => {
    const old = stamped({}, { [APPROVE]: 'true', [APPROVED_BY]: 'bob' });
    const res = mutateOperation(
      aRequest(stamped({}, { [APPROVED_BY]: 'bob' }), { operation: 'UPDATE', oldObject: old, user: 'bob' }),
    );
    expect(decodePatch(res)).toEqual([
      { op: 'remove', path: '/metadata/annotations/ops.vworkspace.io~1approved-by' },
    ]);
  });
});

describe('the spec read once for operationNeeds and decideOperation', () => {
  const withoutBackup = BUILTIN_TEMPLATES.filter((t) => t.name !== 'velero-backup');
  const specs: Record<string, unknown>[] = [
    { parameters: { ttl: '24h' } },
    { type: 'Frobnicate', engine: 7, targetRef: { name: 'Not_A_Label' } },
    { type: 'Upgrade', engine: 'velero' },
    { template: 'nope' },
    { parameters: { ttl: 'forever', quiesce: 'maybe', bucket: 'x' } },
    {
      type: 'Restore',
      parametersFrom: [{ operationRef: { name: 'b1' }, outputs: [{ output: 'backupName' }] }],
    },
    { parameters: { serviceAccountName: 'admin' } },
  ];

  it('decides and asks exactly as without it', () => {
    for (const templates of [
      { ok: true as const, value: BUILTIN_TEMPLATES },
      { ok: true as const, value: withoutBackup },
      { ok: false as const, message: 'not listed yet' },
    ]) {
      for (const spec of specs) {
        const req = aRequest(stamped(spec));
        const facts = someFacts({ templates });
        const read = readOperation(req, facts);
        expect(decideOperation(req, facts, read)).toEqual(decideOperation(req, facts));
        expect(operationNeeds(req, facts, read)).toEqual(operationNeeds(req, facts));
      }
    }
  });

  it('is not used for another spec or another catalog', () => {
    const req = aRequest(stamped());
    const facts = someFacts();
    // Read of a spec that asks for an unknown template: not this request's spec object.
    const other = readOperation(aRequest(stamped({ template: 'nope' })), facts);
    expect(decideOperation(req, facts, other)).toEqual({ uid: 'uid-1', allowed: true });
    expect(operationNeeds(req, facts, other)).toEqual(operationNeeds(req, facts));
    // Read in a catalog without the template: the facts' catalog, which has it, decides.
    const stale = readOperation(req, { templates: { ok: true, value: withoutBackup } });
    expect(stale.templateProblems).not.toEqual([]);
    expect(decideOperation(req, facts, stale)).toEqual({ uid: 'uid-1', allowed: true });
    // And the other way round: a template resolved in a catalog the facts no longer hold is not used.
    const gone = someFacts({ templates: { ok: true, value: withoutBackup } });
    expect(fieldsOf(decideOperation(req, gone, readOperation(req, facts)))).toEqual(['spec.engine']);
  });
});
