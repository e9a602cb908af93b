// The decoded Helm release records the instance controller has read, one per release Secret and
// resourceVersion. The controller watches release Secrets as metadata only (labels name, version, status),
// and reads a record's payload only for a revision of a release an ApplicationInstance names, only when
// that revision's resourceVersion is new to it. What it keeps is the few fields status and capabilities
// need (ReleaseRecord); the payload (the gzipped release, rendered values included) is dropped as soon as
// those are taken, so no Secret content outlives the read.
import type { ReleaseRecord, SecretLike } from '../release/helm-release.ts';
import { decodeReleaseSecret } from '../release/helm-release.ts';

/** Reads one Secret in full; undefined when it no longer exists. */
export type ReadSecret = (
  namespace: string,
  name: string,
  signal?: AbortSignal,
) => Promise<SecretLike | undefined>;

interface Entry {
  resourceVersion: string;
  record?: ReleaseRecord;
  /** Why the record could not be decoded (names the Secret, never its content). */
  problem?: string;
}

export class ReleaseRecords {
  readonly #read: ReadSecret;
  readonly #entries = new Map<string, Entry>();

  constructor(read: ReadSecret) {
    this.#read = read;
  }

  /**
   * The record of the release Secret `meta` describes: from memory when its resourceVersion was read
   * before, else read and decoded now. Throws when the record cannot be decoded (again only once per
   * resourceVersion); undefined when the Secret is gone (its delete event follows).
   */
  async record(meta: SecretLike, signal?: AbortSignal): Promise<ReleaseRecord | undefined> {
    const namespace = meta.metadata?.namespace ?? '';
    const name = meta.metadata?.name ?? '';
    const key = `${namespace}/${name}`;
    const known = this.#entries.get(key);
    if (!known || known.resourceVersion !== meta.metadata?.resourceVersion) {
      const secret = await this.#read(namespace, name, signal);
      if (!secret) return undefined;
      const resourceVersion = secret.metadata?.resourceVersion ?? '';
      try {
        this.#entries.set(key, { resourceVersion, record: decodeReleaseSecret(secret) });
      } catch (err) {
        this.#entries.set(key, {
          resourceVersion,
          problem: err instanceof Error ? err.message : String(err),
        });
      }
    }
    const entry = this.#entries.get(key);
    if (entry?.problem !== undefined) throw new Error(entry.problem);
    return entry?.record;
  }

  /** The Secret is gone: drop what was read from it. */
  forget(namespace: string, name: string): void {
    this.#entries.delete(`${namespace}/${name}`);
  }

  /** Records held (tests, and the memory measurement). */
  get size(): number {
    return this.#entries.size;
  }
}
