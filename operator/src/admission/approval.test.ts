import { describe, expect, it } from 'vitest';
import { anOperation, aRequest } from '../../../test/support/builders/admission.ts';
import { ANNOTATION_APPROVE, ANNOTATION_APPROVED_BY, ANNOTATION_RECONCILE } from '../api/annotations.ts';
import {
  approvalGiven,
  isApprovalTransition,
  isReconcileRequest,
  reconcileAsked,
  requestAnnotations,
} from './approval.ts';

const withAnnotations = (annotations: Record<string, unknown>) => {
  const op = anOperation() as { metadata: Record<string, unknown> };
  return { ...op, metadata: { ...op.metadata, annotations } };
};

describe('approval and re-run requests', () => {
  it('reads the annotations once: the object’s, and the stored object’s only at UPDATE', () => {
    const obj = withAnnotations({ [ANNOTATION_APPROVE]: 'true', ignored: 1 });
    const old = withAnnotations({ [ANNOTATION_RECONCILE]: '1' });
    expect(requestAnnotations(aRequest(obj, { oldObject: old }))).toEqual({
      operation: 'CREATE',
      now: { [ANNOTATION_APPROVE]: 'true' },
      old: {},
    });
    expect(requestAnnotations(aRequest(obj, { operation: 'UPDATE', oldObject: old }))).toEqual({
      operation: 'UPDATE',
      now: { [ANNOTATION_APPROVE]: 'true' },
      old: { [ANNOTATION_RECONCILE]: '1' },
    });
  });

  it('approval is given at CREATE, or at UPDATE unless already given and stamped', () => {
    const cases: [Record<string, unknown>, Record<string, unknown> | undefined, boolean][] = [
      [{ [ANNOTATION_APPROVE]: 'true' }, undefined, true],
      [{ [ANNOTATION_APPROVE]: 'yes' }, undefined, false],
      [{ [ANNOTATION_APPROVE]: 'true' }, {}, true],
      [{ [ANNOTATION_APPROVE]: 'true' }, { [ANNOTATION_APPROVE]: 'true' }, true],
      [
        { [ANNOTATION_APPROVE]: 'true' },
        { [ANNOTATION_APPROVE]: 'true', [ANNOTATION_APPROVED_BY]: 'bob' },
        false,
      ],
    ];
    for (const [now, old, given] of cases) {
      const req = aRequest(withAnnotations(now), {
        ...(old ? { operation: 'UPDATE' as const, oldObject: withAnnotations(old) } : {}),
      });
      expect(isApprovalTransition(req)).toBe(given);
      expect(approvalGiven(requestAnnotations(req))).toBe(given);
    }
  });

  it('a re-run is asked with a reconcile value at CREATE, or a new one at UPDATE', () => {
    const cases: [Record<string, unknown>, Record<string, unknown> | undefined, boolean][] = [
      [{ [ANNOTATION_RECONCILE]: '1' }, undefined, true],
      [{}, undefined, false],
      [{ [ANNOTATION_RECONCILE]: '2' }, { [ANNOTATION_RECONCILE]: '1' }, true],
      [{ [ANNOTATION_RECONCILE]: '1' }, { [ANNOTATION_RECONCILE]: '1' }, false],
      [{}, { [ANNOTATION_RECONCILE]: '1' }, false],
    ];
    for (const [now, old, asked] of cases) {
      const req = aRequest(withAnnotations(now), {
        ...(old ? { operation: 'UPDATE' as const, oldObject: withAnnotations(old) } : {}),
      });
      expect(isReconcileRequest(req)).toBe(asked);
      expect(reconcileAsked(requestAnnotations(req))).toBe(asked);
    }
  });
});
