import { describe, expect, it } from 'vitest';
import type { AdmissionRequest } from './review.ts';
import { outsideScope, watches } from './scope.ts';

const req = (namespace: string, operation: AdmissionRequest['operation'] = 'CREATE'): AdmissionRequest => ({
  uid: 'u1',
  kind: { group: 'ops.vworkspace.io', version: 'v1alpha1', kind: 'Operation' },
  resource: { group: 'ops.vworkspace.io', version: 'v1alpha1', resource: 'operations' },
  namespace,
  operation,
  userInfo: { username: 'alice' },
});

describe('admission in the watched namespaces only', () => {
  it('judges everything when every namespace is watched', () => {
    expect(watches([], 'anywhere')).toBe(true);
    expect(outsideScope(req('anywhere'), [])).toBeUndefined();
  });

  it('judges requests in a watched namespace', () => {
    expect(outsideScope(req('team-a'), ['team-a', 'team-b'])).toBeUndefined();
  });

  it('refuses to create outside, naming the watched namespaces and what to do', () => {
    const r = outsideScope(req('team-c'), ['team-a', 'team-b'])!;
    expect(r.allowed).toBe(false);
    expect(r.status?.code).toBe(403);
    expect(r.status?.message).toMatch(
      /"team-c" is not watched .*team-a, team-b.*nothing would run this Operation.*targetNamespaces/,
    );
  });

  it('leaves updates outside unjudged', () => {
    expect(outsideScope(req('team-c', 'UPDATE'), ['team-a'])).toEqual({ uid: 'u1', allowed: true });
  });
});
