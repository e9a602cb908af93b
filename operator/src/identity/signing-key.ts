// The key the admission stamps are signed with (docs/adr/0029-signed-admission-stamps.md): derived with
// HKDF-SHA256 from the private key of the webhook's serving certificate, which OLM mounts into every
// replica (and only there). So every replica signs and verifies with the same key, the operator needs no
// new permission and no Secret of its own, and whoever can read the key could already impersonate the
// webhook. OLM rotates the certificate: the new key signs from then on, and every key seen since the
// process started still verifies (an Operation waiting across a rotation and a restart must be created
// again, which its condition says).
import { createHash, hkdfSync } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

export interface SigningKey {
  /** A short digest of the derived key: names it in the record without revealing it. */
  id: string;
  key: Buffer;
}

/** Where signing keys come from: the current one, and any by id (verifying an older stamp). */
export interface SigningKeySource {
  current(): SigningKey | undefined;
  find(id: string): SigningKey | undefined;
}

const INFO = 'ops.vworkspace.io admission stamp v1';

/** The signing key derived from a serving private key (PEM bytes). Pure. */
export function deriveSigningKey(servingKeyPem: Buffer): SigningKey {
  const key = Buffer.from(hkdfSync('sha256', servingKeyPem, Buffer.alloc(0), INFO, 32));
  return { id: createHash('sha256').update(key).digest('hex').slice(0, 12), key };
}

/**
 * How long one look at the key file is trusted. Every admission request asks for the current key, and a
 * synchronous stat per request sat on the event loop of both webhooks (bench admission; issue 26). A
 * rotation is taken within this; a stamp signed with a key not seen yet makes find() look at once.
 */
export const KEY_CHECK_INTERVAL_MS = 1_000;

/** The keys of `certDir/tls.key`: re-derived when the file changes, every key seen kept for verifying. */
export class SigningKeys implements SigningKeySource {
  readonly #path: string;
  readonly #now: () => number;
  readonly #seen = new Map<string, SigningKey>();
  #current: SigningKey | undefined;
  #stamp = '';
  #checkedAt = Number.NEGATIVE_INFINITY;

  constructor(certDir: string, now: () => number = Date.now) {
    this.#path = join(certDir, 'tls.key');
    this.#now = now;
  }

  /** The key to sign with now; undefined while the certificate is not there. */
  current(): SigningKey | undefined {
    if (this.#current && this.#now() - this.#checkedAt < KEY_CHECK_INTERVAL_MS) return this.#current;
    return this.#check();
  }

  /** A key by id: the current one or one seen since start (looking at the file now for one not seen). */
  find(id: string): SigningKey | undefined {
    const seen = this.#seen.get(id);
    if (seen) return seen;
    this.#check();
    return this.#seen.get(id);
  }

  #check(): SigningKey | undefined {
    this.#checkedAt = this.#now();
    try {
      const st = statSync(this.#path);
      const stamp = `${st.mtimeMs}/${st.size}/${st.ino}`;
      if (stamp !== this.#stamp || !this.#current) {
        const k = deriveSigningKey(readFileSync(this.#path));
        this.#seen.set(k.id, k);
        this.#current = k;
        this.#stamp = stamp;
      }
    } catch {
      // Not mounted (yet): keep what we had.
    }
    return this.#current;
  }
}
