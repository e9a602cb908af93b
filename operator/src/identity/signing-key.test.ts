import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { deriveSigningKey, KEY_CHECK_INTERVAL_MS, SigningKeys } from './signing-key.ts';

describe('SigningKeys', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const keyDir = (pem: string) => {
    const dir = mkdtempSync(join(tmpdir(), 'vws-signing-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'tls.key'), pem);
    return dir;
  };

  it('takes a rotated key within the check interval, and at once for a stamp signed with it', () => {
    let now = 0;
    const dir = keyDir('first key');
    const keys = new SigningKeys(dir, () => now);
    const first = deriveSigningKey(Buffer.from('first key'));
    expect(keys.current()?.id).toBe(first.id);

    writeFileSync(join(dir, 'tls.key'), 'second key, longer');
    const second = deriveSigningKey(Buffer.from('second key, longer'));
    now += KEY_CHECK_INTERVAL_MS - 1;
    // Within the interval the file is not looked at again...
    expect(keys.current()?.id).toBe(first.id);
    // ...but a stamp of another replica that already signs with the new key verifies now.
    expect(keys.find(second.id)?.key).toEqual(second.key);
    expect(keys.current()?.id).toBe(second.id);
    // Every key seen still verifies.
    expect(keys.find(first.id)?.key).toEqual(first.key);
    expect(keys.find('unknown')).toBeUndefined();
  });

  it('looks again once the interval has passed', () => {
    let now = 0;
    const dir = keyDir('first key');
    const keys = new SigningKeys(dir, () => now);
    keys.current();
    writeFileSync(join(dir, 'tls.key'), 'second key, longer');
    now += KEY_CHECK_INTERVAL_MS;
    expect(keys.current()?.id).toBe(deriveSigningKey(Buffer.from('second key, longer')).id);
  });

  it('has no key while the certificate is not mounted, and takes it once it is', () => {
    let now = 0;
    const dir = keyDir('x');
    rmSync(join(dir, 'tls.key'));
    const keys = new SigningKeys(dir, () => now);
    expect(keys.current()).toBeUndefined();
    writeFileSync(join(dir, 'tls.key'), 'mounted');
    now += 1;
    expect(keys.current()?.id).toBe(deriveSigningKey(Buffer.from('mounted')).id);
  });
});
