// AdmissionReview v1 shapes (client-node has none) and the response builders every webhook uses.
// Pure: no I/O.

export interface UserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface AdmissionRequest<T = unknown> {
  uid: string;
  kind: { group: string; version: string; kind: string };
  resource: { group: string; version: string; resource: string };
  subResource?: string;
  name?: string;
  namespace?: string;
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  userInfo: UserInfo;
  object?: T;
  oldObject?: T;
  dryRun?: boolean;
}

export interface StatusCause {
  field: string;
  message: string;
  reason?: string;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: {
    code: number;
    message: string;
    reason?: string;
    details?: { causes: StatusCause[] };
  };
  patchType?: 'JSONPatch';
  /** base64 of a JSON Patch (RFC 6902) document. */
  patch?: string;
  warnings?: string[];
}

export interface AdmissionReview<T = unknown> {
  apiVersion: 'admission.k8s.io/v1';
  kind: 'AdmissionReview';
  request?: AdmissionRequest<T>;
  response?: AdmissionResponse;
}

export interface JsonPatchOp {
  op: 'add' | 'replace' | 'remove' | 'test';
  path: string;
  value?: unknown;
}

export function allow(uid: string, warnings: string[] = []): AdmissionResponse {
  return { uid, allowed: true, ...(warnings.length > 0 ? { warnings } : {}) };
}

export function allowWithPatch(
  uid: string,
  patch: JsonPatchOp[],
  warnings: string[] = [],
): AdmissionResponse {
  if (patch.length === 0) return allow(uid, warnings);
  return {
    ...allow(uid, warnings),
    patchType: 'JSONPatch',
    patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
  };
}

/**
 * A denial the API server shows to the user verbatim. The message leads with the field paths so
 * `kubectl` output reads like the API server's own validation errors.
 */
export function deny(uid: string, causes: StatusCause[], code = 422, reason = 'Invalid'): AdmissionResponse {
  const message = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message)).join('; ');
  return { uid, allowed: false, status: { code, reason, message, details: { causes } } };
}

export function forbid(uid: string, message: string): AdmissionResponse {
  return { uid, allowed: false, status: { code: 403, reason: 'Forbidden', message } };
}

/** Escapes a key for a JSON Pointer path segment (RFC 6901). */
export function pointerSegment(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}
