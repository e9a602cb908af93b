// What a dry run may show of a child built from a Secret. A helmHookJob Migration runs the hook Jobs stored
// in the Helm release record, a Secret, rendered with the release's values (passwords in an env, a
// connection string in a command). status.plan is read by whoever may read the Operation, who may hold no
// Secret access at all, so a plan never copies a value from the record (DESIGN §6): every string is
// replaced, except those that are names, references or settings of the manifest's shape (which Jobs, which
// images, which ServiceAccount, which security settings) and the operator's own labels and annotations.
// Kept by key, not by guessing what looks secret: whatever a chart puts anywhere else is redacted. Pure.
import { OPS_GROUP } from '../api/constants.ts';
import { isRecord } from './object.ts';

export const REDACTED = '(redacted: from the Helm release record, a Secret)';

/** Keys whose string values are names, references or settings, never a value given to the chart. */
const SHAPE_KEYS = new Set([
  'apiVersion',
  'kind',
  'name',
  'namespace',
  'image',
  'imagePullPolicy',
  'restartPolicy',
  'serviceAccountName',
  'mountPath',
  'claimName',
  'secretName',
  'key',
  'fieldPath',
  'protocol',
  'medium',
]);

/** Subtrees kept whole: security and resource settings (the plan shows what the pod is allowed). */
const SHAPE_SUBTREES = new Set(['securityContext', 'resources']);

const OWN_PREFIX = `${OPS_GROUP}/`;

function redactValue(value: unknown, key: string | undefined): unknown {
  if (typeof value === 'string') return key !== undefined && SHAPE_KEYS.has(key) ? value : REDACTED;
  // Elements stand for their list's key: `command: [...]` is redacted, `imagePullSecrets: [{name}]` kept.
  if (Array.isArray(value)) return value.map((v) => redactValue(v, key));
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if ((k === 'labels' || k === 'annotations') && isRecord(v)) {
      out[k] = Object.fromEntries(
        Object.entries(v).map(([lk, lv]) => [lk, lk.startsWith(OWN_PREFIX) ? lv : REDACTED]),
      );
    } else out[k] = SHAPE_SUBTREES.has(k) ? v : redactValue(v, k);
  }
  return out;
}

/** `manifest` with every value that came from the Secret replaced by REDACTED. */
export function redactSecretSourced<T extends Record<string, unknown>>(manifest: T): T {
  return redactValue(manifest, undefined) as T;
}
