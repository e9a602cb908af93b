// The second baseline of the admission scenario: a null webhook pair whose mutating webhook answers every
// Operation with the JSON patch the operator's answers the bench's Operation with, so that the API server
// decodes and applies a patch of the same shape and size with either pair. The patch is read back from
// the API server itself: a dry-run create through the operator's webhooks returns the object as admitted,
// and the annotations it gained are what the operator's mutating webhook added (the only one registered;
// the bench's Operations carry no annotations of their own, and their stamps are the same for every one
// of them: same spec, namespace and user). Pure.

/** One operation of an RFC 6902 JSON patch, as admission responses carry them. */
export interface JsonPatchOp {
  op: 'add' | 'replace' | 'remove';
  path: string;
  value?: unknown;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function annotationsOf(obj: unknown): Record<string, unknown> | undefined {
  const meta = isRecord(obj) ? obj.metadata : undefined;
  return isRecord(meta) && isRecord(meta.annotations) ? meta.annotations : undefined;
}

/** An annotation key as a JSON pointer segment (RFC 6901). */
const segment = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * The JSON patch that turns `sent`'s annotations into `admitted`'s, written as the operator's mutating
 * webhook writes one (admission/stamps.ts stampPatch): the whole map added when the object had none,
 * else one add, replace or remove per key.
 */
export function annotationPatch(sent: unknown, admitted: unknown): JsonPatchOp[] {
  const before = annotationsOf(sent);
  const after = annotationsOf(admitted) ?? {};
  if (!before)
    return Object.keys(after).length > 0 ? [{ op: 'add', path: '/metadata/annotations', value: after }] : [];
  const ops: JsonPatchOp[] = [];
  for (const [k, v] of Object.entries(after)) {
    if (!Object.hasOwn(before, k))
      ops.push({ op: 'add', path: `/metadata/annotations/${segment(k)}`, value: v });
    else if (JSON.stringify(before[k]) !== JSON.stringify(v))
      ops.push({ op: 'replace', path: `/metadata/annotations/${segment(k)}`, value: v });
  }
  for (const k of Object.keys(before)) {
    if (!Object.hasOwn(after, k)) ops.push({ op: 'remove', path: `/metadata/annotations/${segment(k)}` });
  }
  return ops;
}

/** Where bench/null-webhook.ts says how many requests it answered and how long each took, by path. */
export const STATS_PATH = '/stats';

/** What bench/null-webhook.ts reads from its PATCH_FILE: the webhook path to answer with `patch`. */
export interface NullPatch {
  path: string;
  patch: JsonPatchOp[];
}

/**
 * How a null webhook answers: "allowed" at once, with `nullPatch.patch` (encoded once, here) on requests
 * to `nullPatch.path` and on no other.
 */
export function nullAnswerer(nullPatch?: NullPatch): (uid: string, url: string | undefined) => unknown {
  const encoded =
    nullPatch && nullPatch.patch.length > 0
      ? Buffer.from(JSON.stringify(nullPatch.patch)).toString('base64')
      : undefined;
  return (uid, url) => ({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: {
      uid,
      allowed: true,
      ...(encoded !== undefined && (url ?? '').split('?')[0] === nullPatch?.path
        ? { patchType: 'JSONPatch', patch: encoded }
        : {}),
    },
  });
}
