import { describe, expect, it } from 'vitest';
import { subjectAccessReview } from './sar.ts';

describe('subjectAccessReview', () => {
  const check = { verb: 'runcommand', name: 'shop' };

  it('carries the whole userInfo, extra as a copy the request cannot change afterwards', () => {
    const user = {
      username: 'alice',
      uid: 'u-1',
      groups: ['team-a', 'system:authenticated'],
      extra: { 'authentication.kubernetes.io/credential-id': ['X509SHA256=ab'], scopes: ['a', 'b'] },
    };
    const review = subjectAccessReview(user, 'a', check);
    expect(review.spec).toEqual({
      user: 'alice',
      uid: 'u-1',
      groups: ['team-a', 'system:authenticated'],
      extra: { 'authentication.kubernetes.io/credential-id': ['X509SHA256=ab'], scopes: ['a', 'b'] },
      resourceAttributes: {
        namespace: 'a',
        verb: 'runcommand',
        group: 'apps.vworkspace.io',
        resource: 'applicationinstances',
        name: 'shop',
      },
    });
    user.extra.scopes.push('c');
    user.groups.push('late');
    expect(review.spec.extra?.scopes).toEqual(['a', 'b']);
    expect(review.spec.groups).toEqual(['team-a', 'system:authenticated']);
  });

  it('keeps every extra key, __proto__ included, as the API server sent it', () => {
    const extra = JSON.parse('{"__proto__":["x"],"k":["v"]}') as Record<string, string[]>;
    const review = subjectAccessReview({ username: 'alice', extra }, 'a', check);
    expect(JSON.stringify(review.spec.extra)).toBe('{"__proto__":["x"],"k":["v"]}');
  });

  it('copies an extra that is not a map of lists as it is', () => {
    const extra = { odd: { nested: ['x'] } } as unknown as Record<string, string[]>;
    const review = subjectAccessReview({ username: 'alice', extra }, 'a', check);
    expect(review.spec.extra).toEqual({ odd: { nested: ['x'] } });
    expect(review.spec.extra?.odd).not.toBe(extra.odd);
  });
});
