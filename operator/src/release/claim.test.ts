import { describe, expect, it } from 'vitest';
import { APPLICATION_INSTANCE, type ApplicationInstance } from '../api/index.ts';
import { releaseClaimant, releaseClaimedMessage } from './claim.ts';

function inst(name: string, release: string, created: string, namespace = 'apps'): ApplicationInstance {
  return {
    apiVersion: APPLICATION_INSTANCE.apiVersion,
    kind: APPLICATION_INSTANCE.kind,
    metadata: { name, namespace, uid: `uid-${name}`, creationTimestamp: created as unknown as Date },
    spec: { appRef: { catalogId: 'tiny' }, release: { name: release } },
  };
}

describe('releaseClaimant', () => {
  const shop = inst('shop', 'shop', '2026-01-01T00:00:00Z');
  const mine = inst('mine', 'shop', '2026-01-02T00:00:00Z');

  it('gives the release to the oldest instance naming it, whichever is asked', () => {
    expect(releaseClaimant(mine, [shop, mine])?.metadata.name).toBe('shop');
    expect(releaseClaimant(shop, [shop, mine])).toBeUndefined();
    expect(releaseClaimant(mine, [mine])).toBeUndefined();
  });

  it('breaks a tie in creation time by name, the same way from both sides', () => {
    const a = inst('a', 'web', '2026-01-01T00:00:00Z');
    const b = inst('b', 'web', '2026-01-01T00:00:00Z');
    expect(releaseClaimant(b, [a, b])?.metadata.name).toBe('a');
    expect(releaseClaimant(a, [b, a])).toBeUndefined();
  });

  it('ignores instances naming another release or another namespace', () => {
    const other = inst('other', 'web', '2025-01-01T00:00:00Z');
    const elsewhere = inst('shop', 'shop', '2025-01-01T00:00:00Z', 'team-b');
    expect(releaseClaimant(mine, [other, elsewhere, mine])).toBeUndefined();
  });

  it('says which instance holds the release and what to do', () => {
    const m = releaseClaimedMessage(mine, shop);
    expect(m).toContain('Helm release shop is already described by ApplicationInstance shop');
    expect(m).toContain('Set spec.release.name');
  });
});
