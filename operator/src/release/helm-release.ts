// Reads Helm's release records (Secrets of type helm.sh/release.v1) without Helm: the operator
// never installs apps, it only observes what Helm recorded. Pure functions of Secret objects.
//
// Record layout (Helm v3 "secrets" driver): Secret `sh.helm.release.v1.<release>.v<revision>`
// with labels owner=helm, name=<release>, version=<revision>, status=<status>, and
// data.release = base64(gzip(JSON of the release)) — base64-encoded once more by the Secret.
import { gunzipSync } from 'node:zlib';

export const HELM_RELEASE_SECRET_TYPE = 'helm.sh/release.v1';

export interface SecretLike {
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    resourceVersion?: string;
  };
  type?: string;
  data?: Record<string, string>;
}

/** The fields of a decoded release the operator uses. */
export interface ReleaseRecord {
  name: string;
  namespace: string;
  revision: number;
  status: string;
  chartName: string;
  chartVersion: string;
  appVersion: string;
  /** metadata.annotations of the chart (Chart.yaml `annotations`). */
  chartAnnotations: Record<string, string>;
}

interface RawRelease {
  name?: string;
  namespace?: string;
  version?: number;
  info?: { status?: string };
  chart?: {
    metadata?: { name?: string; version?: string; appVersion?: string; annotations?: Record<string, string> };
  };
  hooks?: unknown;
}

/**
 * One Helm hook as the release record stores it (Helm's release.Hook): the object a template annotated
 * `helm.sh/hook` rendered into, with the release's values applied, never applied by `helm install`
 * itself but run by Helm at its events.
 */
export interface ReleaseHook {
  /** metadata.name of the rendered object. */
  name: string;
  kind: string;
  /** The chart template it came from, e.g. tiny/templates/migration-job.yaml. */
  path: string;
  /** The rendered manifest (one YAML document). */
  manifest: string;
  /** Helm events it runs at: pre-install, post-install, pre-upgrade, …, test. */
  events: string[];
  /** helm.sh/hook-weight (0 when unset or not a number). */
  weight: number;
  /** helm.sh/hook-delete-policy entries; Helm treats none as [before-hook-creation]. */
  deletePolicies: string[];
}

interface RawHook {
  name?: unknown;
  kind?: unknown;
  path?: unknown;
  manifest?: unknown;
  events?: unknown;
  weight?: unknown;
  delete_policies?: unknown;
}

const GZIP_MAGIC = [0x1f, 0x8b];
const MIB = 1024 * 1024;

/**
 * The most bytes of release JSON the operator inflates from one record. A Secret holds at most 1 MiB, so
 * a real record (rendered manifests, chart files and values, compressed a few times over) inflates to a
 * few MiB; a record that inflates further is refused, so that a few hundred KiB of gzip cannot make the
 * operator allocate without bound (a decompression bomb), whoever wrote the Secret.
 */
export const MAX_RELEASE_RECORD_BYTES = 32 * MIB;

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];

/** The record's JSON bytes: gunzipped (bounded by MAX_RELEASE_RECORD_BYTES) when Helm compressed it. */
function inflate(inner: Buffer, id: string): Buffer {
  const limit = MAX_RELEASE_RECORD_BYTES;
  const tooLarge = `Helm release Secret ${id} inflates to more than ${limit / MIB} MiB, more than any release record needs, so the operator does not read it; if helm wrote it, the chart is too large for the operator (report it); otherwise delete the Secret and find out who wrote it`;
  if (inner[0] !== GZIP_MAGIC[0] || inner[1] !== GZIP_MAGIC[1]) {
    if (inner.length > limit) throw new Error(tooLarge);
    return inner;
  }
  try {
    // maxOutputLength stops inflating at the limit instead of allocating what the stream asks for.
    return gunzipSync(inner, { maxOutputLength: limit });
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw new Error(tooLarge);
    throw new Error(`Helm release Secret ${id} is not valid gzip (${(err as Error).message})`);
  }
}

/** The release JSON inside a release Secret; throws an Error that says what is wrong with the record. */
function decodePayload(secret: SecretLike): RawRelease {
  const id = `${secret.metadata?.namespace ?? ''}/${secret.metadata?.name ?? ''}`;
  if (secret.type !== HELM_RELEASE_SECRET_TYPE)
    throw new Error(`Secret ${id} is not a Helm release record (type ${secret.type ?? 'unset'})`);
  const encoded = secret.data?.release;
  if (!encoded) throw new Error(`Helm release Secret ${id} has no data.release`);
  // Secret data is base64; inside it Helm wrote base64 of (usually gzipped) JSON.
  const inner = Buffer.from(Buffer.from(encoded, 'base64').toString('utf8'), 'base64');
  const bytes = inflate(inner, id);
  try {
    return JSON.parse(bytes.toString('utf8')) as RawRelease;
  } catch {
    throw new Error(`Helm release Secret ${id} does not hold a JSON release record`);
  }
}

/**
 * The hooks of one release record, in the order Helm stored them (by kind, as Helm installs them).
 * Throws like decodeReleaseSecret. Pure; the caller drops the payload once it has what it runs.
 */
export function decodeReleaseHooks(secret: SecretLike): ReleaseHook[] {
  const raw = decodePayload(secret);
  const hooks = Array.isArray(raw.hooks) ? (raw.hooks as RawHook[]) : [];
  return hooks
    .filter((h) => h !== null && typeof h === 'object')
    .map((h) => ({
      name: typeof h.name === 'string' ? h.name : '',
      kind: typeof h.kind === 'string' ? h.kind : '',
      path: typeof h.path === 'string' ? h.path : '',
      manifest: typeof h.manifest === 'string' ? h.manifest : '',
      events: strings(h.events),
      weight: typeof h.weight === 'number' && Number.isInteger(h.weight) ? h.weight : 0,
      deletePolicies: strings(h.delete_policies),
    }));
}

/** Decodes one release Secret; throws an Error that says what is wrong with the record. */
export function decodeReleaseSecret(secret: SecretLike): ReleaseRecord {
  const id = `${secret.metadata?.namespace ?? ''}/${secret.metadata?.name ?? ''}`;
  const raw = decodePayload(secret);
  const labels = secret.metadata?.labels ?? {};
  const revision = raw.version ?? Number(labels.version);
  if (!Number.isInteger(revision)) throw new Error(`Helm release Secret ${id} has no revision`);
  const meta = raw.chart?.metadata ?? {};
  return {
    name: raw.name ?? labels.name ?? '',
    namespace: raw.namespace ?? secret.metadata?.namespace ?? '',
    revision,
    status: raw.info?.status ?? labels.status ?? 'unknown',
    chartName: meta.name ?? '',
    chartVersion: meta.version ?? '',
    appVersion: meta.appVersion ?? '',
    chartAnnotations: { ...(meta.annotations ?? {}) },
  };
}

/**
 * True for Secrets that are Helm release records of `release` (by Helm's labels, and by type where the
 * object carries one: metadata-only objects do not, their informer selects the type on the server).
 */
export function isReleaseSecretOf(secret: SecretLike, release: string): boolean {
  const labels = secret.metadata?.labels ?? {};
  const typed = secret.type === undefined || secret.type === HELM_RELEASE_SECRET_TYPE;
  return typed && labels.owner === 'helm' && labels.name === release;
}

/** Reads one release record given its Secret (or only the Secret's metadata); undefined: it is gone. */
export type ReadRecord<S> = (secret: S) => ReleaseRecord | undefined | Promise<ReleaseRecord | undefined>;

/**
 * The latest revision of `release` among `secrets` (any Secrets of the namespace, or their metadata),
 * read newest first with `read` until one decodes. Undecodable records are returned in `problems`
 * instead of failing the whole read.
 */
export async function latestRelease<S extends SecretLike>(
  secrets: readonly S[],
  release: string,
  read: ReadRecord<S> = decodeReleaseSecret,
): Promise<{ record?: ReleaseRecord; problems: string[] }> {
  const problems: string[] = [];
  const candidates = secrets
    .filter((s) => isReleaseSecretOf(s, release))
    .sort((a, b) => Number(b.metadata?.labels?.version ?? 0) - Number(a.metadata?.labels?.version ?? 0));
  for (const secret of candidates) {
    try {
      const record = await read(secret);
      if (record) return { record, problems };
    } catch (err) {
      problems.push(err instanceof Error ? err.message : String(err));
    }
  }
  return { problems };
}

export type ReadyReason =
  | 'ReleaseDeployed'
  | 'ReleaseFailed'
  | 'ReleasePending'
  | 'ReleaseNotFound'
  | 'ReleaseNamespaceForbidden'
  | 'ReleaseClaimed'
  | 'ReleaseRecordUnreadable';

export interface ReadyState {
  status: 'True' | 'False';
  reason: ReadyReason;
  message: string;
}

/** Maps the latest release record onto the ApplicationInstance Ready condition (DESIGN.md §2). */
export function readyFromRelease(
  release: string,
  namespace: string,
  record: ReleaseRecord | undefined,
): ReadyState {
  if (!record || record.status === 'uninstalled') {
    return {
      status: 'False',
      reason: 'ReleaseNotFound',
      message: `No Helm release "${release}" is recorded in namespace ${namespace} (no Secret of type ${HELM_RELEASE_SECRET_TYPE} labelled name=${release}); install the chart or fix spec.release.`,
    };
  }
  const at = `Helm release ${namespace}/${release} revision ${record.revision} (chart ${record.chartName}-${record.chartVersion})`;
  switch (record.status) {
    case 'deployed':
      return { status: 'True', reason: 'ReleaseDeployed', message: `${at} is deployed.` };
    case 'failed':
      return {
        status: 'False',
        reason: 'ReleaseFailed',
        message: `${at} failed; fix the release (helm history / helm rollback) before operating on it.`,
      };
    default:
      // pending-install, pending-upgrade, pending-rollback, uninstalling, superseded-as-latest, unknown
      return {
        status: 'False',
        reason: 'ReleasePending',
        message: `${at} is "${record.status}"; waiting for Helm to finish. A release stuck in a pending state needs \`helm rollback\`.`,
      };
  }
}
