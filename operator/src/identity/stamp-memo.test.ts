// signStamps keeps the MACs it computed lately (stamp.ts): the validating webhook, signing the same object
// the mutating one signed, computes no second HMAC. Counted through node:crypto's createHmac.
import * as crypto from 'node:crypto';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { deriveSigningKey } from './signing-key.ts';
import { SIGNED_CONTENT_MAX, SIGNED_KEPT, signStamps, verifyStamps } from './stamp.ts';

vi.mock('node:crypto', async (original) => {
  const actual = await original<typeof import('node:crypto')>();
  return {
    ...actual,
    createHmac: vi.fn((...args: Parameters<typeof actual.createHmac>) => actual.createHmac(...args)),
  };
});

const hmacs = vi.mocked(crypto.createHmac);
const stamps = { createdBy: 'alice', creatorGroups: ['team-a'], actsFor: [] };
const spec = () => ({
  type: 'Backup',
  engine: 'velero',
  targetRef: { name: 'shop' },
  parameters: { ttl: '24h' },
});

describe('the MACs signStamps computed lately', () => {
  beforeEach(() => {
    hmacs.mockClear();
  });

  it('answer the same content under the same key without a second HMAC, with the same record', () => {
    const key = deriveSigningKey(Buffer.from('serving key'));
    const first = signStamps(key, 'ns', spec(), stamps);
    const second = signStamps(key, 'ns', structuredClone(spec()), { ...stamps, creatorGroups: ['team-a'] });
    expect(second).toBe(first);
    expect(hmacs).toHaveBeenCalledTimes(1);
    // The same key derived again (another Buffer) computes it afresh, and gets the same record.
    expect(signStamps(deriveSigningKey(Buffer.from('serving key')), 'ns', spec(), stamps)).toBe(first);
    expect(hmacs).toHaveBeenCalledTimes(2);
  });

  it('are not consulted for other content, another key, or by verification', () => {
    const key = deriveSigningKey(Buffer.from('serving key 2'));
    const signed = signStamps(key, 'ns', spec(), stamps);
    signStamps(key, 'other', spec(), stamps);
    signStamps(key, 'ns', { ...spec(), parameters: { ttl: '48h' } }, stamps);
    signStamps(key, 'ns', spec(), { ...stamps, creatorGroups: ['team-b'] });
    signStamps(deriveSigningKey(Buffer.from('another key')), 'ns', spec(), stamps);
    expect(hmacs).toHaveBeenCalledTimes(5);
    const obj = {
      metadata: {
        namespace: 'ns',
        annotations: { 'ops.vworkspace.io/created-by': 'alice', 'ops.vworkspace.io/admission': signed },
      },
      spec: spec(),
    };
    expect(verifyStamps(obj, (id) => (id === key.id ? key : undefined)).ok).toBe(true);
    expect(hmacs).toHaveBeenCalledTimes(6);
  });

  it('keep neither large contents nor more than SIGNED_KEPT', () => {
    const key = deriveSigningKey(Buffer.from('serving key 3'));
    const large = { ...spec(), parameters: { blob: 'x'.repeat(SIGNED_CONTENT_MAX) } };
    expect(signStamps(key, 'ns', large, stamps)).toBe(signStamps(key, 'ns', large, stamps));
    expect(hmacs).toHaveBeenCalledTimes(2);
    hmacs.mockClear();
    for (let i = 0; i <= SIGNED_KEPT; i++) signStamps(key, `ns${i}`, spec(), stamps);
    signStamps(key, `ns${SIGNED_KEPT}`, spec(), stamps);
    expect(hmacs).toHaveBeenCalledTimes(SIGNED_KEPT + 1);
    signStamps(key, 'ns0', spec(), stamps);
    expect(hmacs).toHaveBeenCalledTimes(SIGNED_KEPT + 2);
  });
});
