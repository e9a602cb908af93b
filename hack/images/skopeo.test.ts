import { describe, expect, it } from 'vitest';
import { mirrorTag } from './skopeo.ts';

const D = `sha256:${'0123456789ab'}${'f'.repeat(52)}`;

describe('mirrorTag', () => {
  it('tags a digest reference mirror-<first 12 hex> in the same repository', () => {
    expect(mirrorTag(`mirror.example.com:5000/olm/vworkspace/op@${D}`)).toBe(
      'mirror.example.com:5000/olm/vworkspace/op:mirror-0123456789ab',
    );
  });

  it('refuses a reference without a digest (skopeo could not check what it copied)', () => {
    expect(() => mirrorTag('mirror.example.com/olm/op:v1')).toThrow(/not a digest reference/);
  });
});
