import { describe, expect, it } from 'vitest';
import { annotationPatch, nullAnswerer } from './admission-patch.ts';

const op = (annotations?: Record<string, string>) => ({
  kind: 'Operation',
  metadata: { name: 'dry-0', ...(annotations ? { annotations } : {}) },
  spec: { type: 'RunCommand' },
});

describe('annotationPatch', () => {
  it('adds the whole map to an object that had none, as the operator does', () => {
    const stamps = { 'ops.vworkspace.io/created-by': 'admin', 'ops.vworkspace.io/admission': '{"v":1}' };
    expect(annotationPatch(op(), op(stamps))).toEqual([
      { op: 'add', path: '/metadata/annotations', value: stamps },
    ]);
    expect(annotationPatch(op(), op())).toEqual([]);
  });

  it('adds, replaces and removes single keys (escaped) of an object that had some', () => {
    expect(
      annotationPatch(
        op({ keep: '1', change: 'a', gone: 'x' }),
        op({ keep: '1', change: 'b', 'a/b~c': 'n' }),
      ),
    ).toEqual([
      { op: 'replace', path: '/metadata/annotations/change', value: 'b' },
      { op: 'add', path: '/metadata/annotations/a~1b~0c', value: 'n' },
      { op: 'remove', path: '/metadata/annotations/gone' },
    ]);
  });
});

describe('nullAnswerer', () => {
  const patch = [{ op: 'add' as const, path: '/metadata/annotations', value: { a: 'b' } }];

  it('answers allowed, echoing the uid, with the patch only on its path', () => {
    const answer = nullAnswerer({ path: '/mutate-operation', patch });
    const patched = answer('u1', '/mutate-operation?timeout=10s') as { response: Record<string, unknown> };
    expect(patched.response).toMatchObject({ uid: 'u1', allowed: true, patchType: 'JSONPatch' });
    expect(JSON.parse(Buffer.from(patched.response.patch as string, 'base64').toString())).toEqual(patch);
    expect(answer('u2', '/validate-operation')).toEqual({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'u2', allowed: true },
    });
  });

  it('without a patch (or an empty one) answers every path with allowed alone', () => {
    for (const answer of [nullAnswerer(), nullAnswerer({ path: '/mutate-operation', patch: [] })]) {
      expect(answer('u', '/mutate-operation')).toEqual({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        response: { uid: 'u', allowed: true },
      });
    }
  });
});
