// Signed admission stamps (docs/adr/0029-signed-admission-stamps.md). The webhook writes who created an
// Operation, who approved it, whom it acts for and who asked to re-run it as annotations; where the webhook did not run (a
// namespace its namespaceSelector leaves out, an object stored while it was not registered) anyone who may
// create an Operation could write the same annotations. So the mutating webhook also writes
// ops.vworkspace.io/admission: the creator's and approver's groups (for the reconciler's access reviews) and
// an HMAC-SHA256, with a key only the operator's pods hold, over the namespace, the spec (less `cancel`, the
// one field that may change), every stamp and the ops.vworkspace.io/reconcile value the re-run stamp belongs
// to. The reconciler runs nothing, and re-runs nothing, whose record does not verify.
// Pure, apart from node:crypto.
import { createHmac, timingSafeEqual } from 'node:crypto';
import {
  ANNOTATION_ACTS_FOR,
  ANNOTATION_ADMISSION,
  ANNOTATION_APPROVE,
  ANNOTATION_APPROVED_BY,
  ANNOTATION_CREATED_BY,
  ANNOTATION_RECONCILE,
  ANNOTATION_RECONCILE_REQUESTED_BY,
} from '../api/annotations.ts';
import type { SigningKey } from './signing-key.ts';

/** Who an admitted Operation names, as the webhook saw them. */
export interface Stamps {
  createdBy: string;
  creatorGroups: readonly string[];
  /** Set while ops.vworkspace.io/approve is "true". */
  approvedBy?: string;
  approverGroups?: readonly string[];
  /** The users a scheduled Operation acts for (ANNOTATION_ACTS_FOR); empty for anyone else's. */
  actsFor: readonly string[];
  /** The current ops.vworkspace.io/reconcile request (a re-run): its value and who set it, with their groups. */
  reconcile?: ReconcileRequest;
}

export interface ReconcileRequest {
  value: string;
  requestedBy: string;
  requesterGroups: readonly string[];
}

/** The record in ANNOTATION_ADMISSION. */
interface AdmissionRecord {
  v: 1;
  kid: string;
  creatorGroups: string[];
  approverGroups?: string[];
  reconcileRequesterGroups?: string[];
  mac: string;
}

/** `keyUnknown`: the record may be genuine, signed before the serving certificate changed (an upgrade). */
export type Verified = { ok: true; stamps: Stamps } | { ok: false; message: string; keyUnknown?: true };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A container being written by `canonical`: an object with its sorted keys, or an array; `at` is the next. */
type Open = { keys: string[]; obj: Record<string, unknown>; at: number } | { items: unknown[]; at: number };

/**
 * JSON with sorted keys (and without undefined fields), built with a stack of its own rather than by
 * recursion: the mutating webhook signs a spec before the validating one refuses one too deep, and the
 * reconciler verifies whatever the API server stored, up to its decoder's 10,000 levels. One stack entry
 * per open object or array, the text appended as it goes: both webhooks sign on every Operation request,
 * so this is on the path of every create (docs/performance.md, issue 26). Its output is what the MAC
 * covers and must never change: records signed by earlier versions must keep verifying (stamp.test.ts
 * pins it).
 */
export function canonical(root: unknown): string {
  let out = '';
  const open: Open[] = [];
  let value: unknown = root;
  for (;;) {
    if (Array.isArray(value)) {
      out += '[';
      open.push({ items: value, at: 0 });
    } else if (isObject(value)) {
      const obj = value;
      out += '{';
      open.push({
        keys: Object.keys(obj)
          .filter((k) => obj[k] !== undefined)
          .sort(),
        obj,
        at: 0,
      });
    } else out += JSON.stringify(value ?? null) ?? '';
    // The next value to write: the next item or field of the innermost open container, closing those done.
    let next = false;
    while (!next && open.length > 0) {
      const top = open[open.length - 1] as Open;
      if ('items' in top) {
        if (top.at < top.items.length) {
          if (top.at > 0) out += ',';
          value = top.items[top.at++];
          next = true;
        } else {
          out += ']';
          open.pop();
        }
      } else if (top.at < top.keys.length) {
        const k = top.keys[top.at] as string;
        out += `${top.at > 0 ? ',' : ''}${JSON.stringify(k)}:`;
        top.at++;
        value = top.obj[k];
        next = true;
      } else {
        out += '}';
        open.pop();
      }
    }
    if (!next) return out;
  }
}

/** The spec as signed: everything but `cancel`, which stays settable after admission. */
function signedSpec(spec: unknown): unknown {
  if (!isObject(spec)) return spec ?? null;
  const { cancel: _cancel, ...rest } = spec;
  return rest;
}

/** The users in an ANNOTATION_ACTS_FOR value; undefined when it is not a JSON array of strings. */
export function parseActsFor(value: string | undefined): string[] | undefined {
  if (value === undefined) return [];
  try {
    const parsed: unknown = JSON.parse(value);
    return Array.isArray(parsed) && parsed.every((x) => typeof x === 'string') ? parsed : undefined;
  } catch {
    return undefined;
  }
}

export function formatActsFor(users: readonly string[]): string | undefined {
  const unique = [...new Set(users.filter((u) => u !== ''))];
  return unique.length > 0 ? JSON.stringify(unique) : undefined;
}

/** What the MAC covers: the namespace, the spec as signed and every stamp, as canonical JSON. */
function signedContent(namespace: string, spec: unknown, stamps: Stamps): string {
  return canonical({
    v: 1,
    namespace,
    spec: signedSpec(spec),
    createdBy: stamps.createdBy,
    creatorGroups: [...stamps.creatorGroups],
    approvedBy: stamps.approvedBy ?? null,
    approverGroups: stamps.approvedBy !== undefined ? [...(stamps.approverGroups ?? [])] : null,
    actsFor: [...stamps.actsFor],
    reconcile: stamps.reconcile?.value ?? null,
    reconcileRequestedBy: stamps.reconcile?.requestedBy ?? null,
    reconcileRequesterGroups: stamps.reconcile ? [...stamps.reconcile.requesterGroups] : null,
  });
}

const hmac = (key: Buffer, content: string) => createHmac('sha256', key).update(content).digest('base64url');

function mac(key: Buffer, namespace: string, spec: unknown, stamps: Stamps): string {
  return hmac(key, signedContent(namespace, spec, stamps));
}

/**
 * The MACs signStamps computed lately, per key (by its bytes' Buffer), by the content they cover. Both
 * webhooks sign every Operation request: the mutating one to write the record, the validating one to
 * check that the record on the object it sees is exactly what the webhook would write for it. For the
 * same object that is the same key and content, so the validating one finds the MAC here instead of
 * computing the HMAC again (issue 26).
 *
 * Why this keeps verification what it was: an entry is HMAC-SHA256(key, content) as computed by this
 * process, and the lookup is by the exact content and key, so the answer is the one computing it gives:
 * the cache holds no claim made by a request. The validating webhook still builds the content from the
 * object it is asked about (namespace, spec, stamps, groups) and refuses any record that is not exactly
 * the one it expects: a record a user wrote, one made for another object or spec, or one made with
 * another key (each key's Buffer has a map of its own, so a rotated key finds nothing) is refused as
 * before. Only signing consults it, never verifyStamps, which reads the stamps a stored object claims:
 * and the signing content at CREATE names the requester, at UPDATE the stamps of an object the
 * requester is updating, so whether an entry exists tells a requester nothing about anyone else's.
 * Bounded: SIGNED_KEPT entries per key, each of content up to SIGNED_CONTENT_MAX characters (larger
 * contents are computed each time), the oldest let go.
 */
const signedMacs = new WeakMap<Buffer, Map<string, string>>();
export const SIGNED_KEPT = 256;
export const SIGNED_CONTENT_MAX = 8 * 1024;

function signedMac(key: Buffer, namespace: string, spec: unknown, stamps: Stamps): string {
  const content = signedContent(namespace, spec, stamps);
  const kept = signedMacs.get(key);
  const hit = kept?.get(content);
  if (hit !== undefined) return hit;
  const value = hmac(key, content);
  if (content.length > SIGNED_CONTENT_MAX) return value;
  if (!kept) signedMacs.set(key, new Map([[content, value]]));
  else {
    if (kept.size >= SIGNED_KEPT) kept.delete(kept.keys().next().value as string);
    kept.set(content, value);
  }
  return value;
}

/** The ANNOTATION_ADMISSION value for an Operation of `namespace` with `spec` and `stamps`. */
export function signStamps(key: SigningKey, namespace: string, spec: unknown, stamps: Stamps): string {
  const record: AdmissionRecord = {
    v: 1,
    kid: key.id,
    creatorGroups: [...stamps.creatorGroups],
    ...(stamps.approvedBy !== undefined ? { approverGroups: [...(stamps.approverGroups ?? [])] } : {}),
    ...(stamps.reconcile ? { reconcileRequesterGroups: [...stamps.reconcile.requesterGroups] } : {}),
    mac: signedMac(key.key, namespace, spec, stamps),
  };
  return JSON.stringify(record);
}

function readRecord(value: string): AdmissionRecord | undefined {
  try {
    const r: unknown = JSON.parse(value);
    if (!isObject(r) || r.v !== 1 || typeof r.kid !== 'string' || typeof r.mac !== 'string') return undefined;
    const strings = (x: unknown) => Array.isArray(x) && x.every((s) => typeof s === 'string');
    const optional = (x: unknown) => x === undefined || strings(x);
    if (!strings(r.creatorGroups) || !optional(r.approverGroups) || !optional(r.reconcileRequesterGroups))
      return undefined;
    return r as unknown as AdmissionRecord;
  } catch {
    return undefined;
  }
}

const NOT_ADMITTED =
  "the operator's admission webhooks did not admit it: its namespace is not selected by their namespaceSelector, or it was stored while they were not registered";

/**
 * The stamps an object's annotations claim, and whether its ANNOTATION_ADMISSION record proves them. `keys`
 * finds a key by id (the current one or one seen since the process started).
 */
export function verifyStamps(
  obj: { metadata?: { namespace?: string; annotations?: Record<string, string> }; spec?: unknown },
  keys: (id: string) => SigningKey | undefined,
): Verified {
  const ann = obj.metadata?.annotations ?? {};
  const value = ann[ANNOTATION_ADMISSION];
  if (value === undefined)
    return { ok: false, message: `it carries no ${ANNOTATION_ADMISSION}: ${NOT_ADMITTED}` };
  const record = readRecord(value);
  const createdBy = ann[ANNOTATION_CREATED_BY];
  const actsFor = parseActsFor(ann[ANNOTATION_ACTS_FOR]);
  if (!record || createdBy === undefined || !actsFor) {
    return { ok: false, message: `its ${ANNOTATION_ADMISSION} record is malformed: ${NOT_ADMITTED}` };
  }
  const key = keys(record.kid);
  if (!key) {
    return {
      ok: false,
      keyUnknown: true,
      message: `its ${ANNOTATION_ADMISSION} record was signed with a key this operator does not hold (key ${record.kid}; the webhook's serving certificate was replaced, or the record was written by someone else)`,
    };
  }
  const approved = ann[ANNOTATION_APPROVE] === 'true' ? ann[ANNOTATION_APPROVED_BY] : undefined;
  const reconcile = ann[ANNOTATION_RECONCILE];
  const requestedBy = reconcile !== undefined ? ann[ANNOTATION_RECONCILE_REQUESTED_BY] : undefined;
  const stamps: Stamps = {
    createdBy,
    creatorGroups: record.creatorGroups,
    ...(approved !== undefined ? { approvedBy: approved, approverGroups: record.approverGroups ?? [] } : {}),
    actsFor,
    ...(reconcile !== undefined && requestedBy !== undefined
      ? {
          reconcile: {
            value: reconcile,
            requestedBy,
            requesterGroups: record.reconcileRequesterGroups ?? [],
          },
        }
      : {}),
  };
  const expected = Buffer.from(mac(key.key, obj.metadata?.namespace ?? '', obj.spec, stamps));
  const given = Buffer.from(record.mac);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return {
      ok: false,
      message: `its ${ANNOTATION_ADMISSION} record does not match its namespace, spec or identity annotations: they were written without the webhook`,
    };
  }
  return { ok: true, stamps };
}
