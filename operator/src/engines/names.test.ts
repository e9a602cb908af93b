import { describe, expect, it } from 'vitest';
import { anOperation } from '../../../test/support/builders/engines.ts';
import { LABEL_OPERATION, LABEL_OPERATION_NAMESPACE } from '../api/annotations.ts';
import { MAX_OPERATION_NAME_LENGTH } from '../api/constants.ts';
import {
  ANNOTATION_ATTEMPT,
  childMetadata,
  childName,
  HASH_LENGTH,
  NAME_LIMITS,
  operationOwnerReference,
} from './names.ts';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

describe('childName', () => {
  it('is <op-name>-<hash>, the same for the same input', () => {
    const op = anOperation({ name: 'nightly' });
    const a = childName(op, 1, 63);
    expect(a).toMatch(new RegExp(`^nightly-[a-z2-7]{${HASH_LENGTH}}$`));
    expect(childName(anOperation({ name: 'nightly' }), 1, 63)).toBe(a);
  });

  it('changes with the attempt, the per-child suffix and the Operation uid', () => {
    const op = anOperation();
    const names = new Set([
      childName(op, 1, 63),
      childName(op, 2, 63),
      childName(op, 1, 63, 'data'),
      childName(op, 1, 63, 'db'),
      childName(anOperation({ uid: 'another-uid' }), 1, 63),
    ]);
    expect(names.size).toBe(5);
  });

  it('uses namespace/name before the Operation has a uid', () => {
    const a = childName(anOperation({ uid: null, namespace: 'a' }), 1, 63);
    const b = childName(anOperation({ uid: null, namespace: 'b' }), 1, 63);
    expect(a).not.toBe(b);
  });

  it('fits every kind limit for the longest Operation name, staying a DNS label', () => {
    const longest = `${'a'.repeat(MAX_OPERATION_NAME_LENGTH - 2)}-b`;
    const cutAtDash = `${'a'.repeat(40)}-${'b'.repeat(MAX_OPERATION_NAME_LENGTH - 41)}`;
    for (const name of [longest, cutAtDash]) {
      for (const limit of Object.values(NAME_LIMITS)) {
        const n = childName(anOperation({ name }), 10, limit, 'some-pvc');
        expect(n.length).toBeLessThanOrEqual(limit);
        expect(n).toMatch(DNS_LABEL);
        expect(n).not.toContain('--');
      }
    }
  });
});

describe('childMetadata', () => {
  it('owns children in the Operation namespace with a controller reference', () => {
    const op = anOperation({ name: 'op1', namespace: 'team-a', uid: 'u-1' });
    const m = childMetadata(op, { name: 'op1-x', attempt: 2 });
    expect(m.namespace).toBe('team-a');
    expect(m.ownerReferences).toEqual([
      {
        apiVersion: 'ops.vworkspace.io/v1alpha1',
        kind: 'Operation',
        name: 'op1',
        uid: 'u-1',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(m.labels?.[LABEL_OPERATION]).toBe('op1');
    expect(m.labels?.[LABEL_OPERATION_NAMESPACE]).toBeUndefined();
    expect(m.annotations?.[ANNOTATION_ATTEMPT]).toBe('2');
  });

  it('labels children in another namespace instead (owner references cannot cross namespaces)', () => {
    const m = childMetadata(anOperation({ name: 'op1', namespace: 'team-a' }), {
      name: 'x',
      namespace: 'velero',
      attempt: 1,
    });
    expect(m.ownerReferences).toBeUndefined();
    expect(m.labels).toMatchObject({ [LABEL_OPERATION]: 'op1', [LABEL_OPERATION_NAMESPACE]: 'team-a' });
  });

  it('has no owner reference before the Operation has a uid', () => {
    expect(operationOwnerReference(anOperation({ uid: null }))).toBeUndefined();
  });
});
