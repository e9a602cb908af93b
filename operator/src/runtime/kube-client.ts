// A small JSON REST client over @kubernetes/client-node's config, auth and HTTP transport.
// The runtime reads and writes raw JSON exactly as the API server sends it: the generated typed
// clients turn timestamps into Date objects on some paths and not others, cannot reach every
// subresource with every patch type, and we need the same shapes from list, watch and get.
// Failures are thrown as KubeApiError, a client-node ApiException, so `err.code` works the same
// for errors from this client and from the generated ones.

import {
  ApiException,
  HttpMethod,
  IsomorphicFetchHttpLibrary,
  type KubeConfig,
  type KubernetesObject,
  RequestContext,
} from '@kubernetes/client-node';

export type QueryValue = string | number | boolean | undefined;

export interface KubeRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, QueryValue>;
  body?: unknown;
  /** Default application/json. Patches: see PATCH_TYPES. */
  contentType?: string;
  /** Default application/json; e.g. PARTIAL_OBJECT_METADATA_LIST (metadata.ts) for metadata only. */
  accept?: string;
  signal?: AbortSignal;
  /** Abort after this long (default 30 s): a hung API server must not hang a reconcile forever. */
  timeoutMs?: number;
}

/** What the runtime needs from an API client; tests substitute an in-memory one. */
export interface KubeClient {
  request<T = unknown>(req: KubeRequest): Promise<T>;
}

export const PATCH_TYPES = {
  apply: 'application/apply-patch+yaml',
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
} as const;

/** A metav1.Status body, as the API server returns it with errors. */
export interface KubeStatus {
  kind?: string;
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: unknown;
}

export class KubeApiError extends ApiException<KubeStatus | string | undefined> {
  readonly reason: string;

  constructor(code: number, reason: string, message: string, body: KubeStatus | string | undefined) {
    super(code, message, body, {});
    this.name = 'KubeApiError';
    this.reason = reason;
    // ApiException's message embeds the whole body and headers; keep log lines short.
    this.message = `${code} ${reason}: ${message}`;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

/** HTTP status of an error from this client, the generated clients, or client-node's Watch. */
export function statusCode(err: unknown): number | undefined {
  if (!isRecord(err)) return undefined;
  if (typeof err.code === 'number') return err.code;
  if (typeof err.statusCode === 'number') return err.statusCode;
  return undefined;
}

function statusReason(err: unknown): string | undefined {
  if (err instanceof KubeApiError) return err.reason;
  if (isRecord(err) && isRecord(err.body) && typeof err.body.reason === 'string') return err.body.reason;
  if (isRecord(err) && typeof err.body === 'string') {
    try {
      const parsed: unknown = JSON.parse(err.body);
      if (isRecord(parsed) && typeof parsed.reason === 'string') return parsed.reason;
    } catch {
      // not JSON
    }
  }
  return undefined;
}

export const isNotFound = (err: unknown): boolean => statusCode(err) === 404;
export const isGone = (err: unknown): boolean => statusCode(err) === 410;
/** 409 from an update with a stale resourceVersion (optimistic concurrency lost). */
export const isConflict = (err: unknown): boolean =>
  statusCode(err) === 409 && statusReason(err) !== 'AlreadyExists';
export const isAlreadyExists = (err: unknown): boolean =>
  statusCode(err) === 409 && statusReason(err) === 'AlreadyExists';

/** Where a kind lives in the REST API. `namespace` undefined ⇒ cluster scope (or all namespaces). */
export interface ResourceRef {
  /** '' for the core group. */
  group: string;
  version: string;
  plural: string;
  namespace?: string;
}

export function apiVersionOf(r: Pick<ResourceRef, 'group' | 'version'>): string {
  return r.group ? `${r.group}/${r.version}` : r.version;
}

export function resourcePath(r: ResourceRef, name?: string, subresource?: string): string {
  const base = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  let p = r.namespace
    ? `${base}/namespaces/${encodeURIComponent(r.namespace)}/${r.plural}`
    : `${base}/${r.plural}`;
  if (name !== undefined) p += `/${encodeURIComponent(name)}`;
  if (subresource !== undefined) p += `/${subresource}`;
  return p;
}

export class RestClient implements KubeClient {
  readonly #kc: KubeConfig;
  readonly #http = new IsomorphicFetchHttpLibrary();

  constructor(kc: KubeConfig) {
    this.#kc = kc;
  }

  get kubeConfig(): KubeConfig {
    return this.#kc;
  }

  async request<T = unknown>(req: KubeRequest): Promise<T> {
    const cluster = this.#kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    const ctx = new RequestContext(`${cluster.server}${req.path}`, HttpMethod[req.method]);
    for (const [k, v] of Object.entries(req.query ?? {}))
      if (v !== undefined) ctx.setQueryParam(k, String(v));
    ctx.setHeaderParam('Accept', req.accept ?? 'application/json');
    if (req.body !== undefined) {
      ctx.setHeaderParam('Content-Type', req.contentType ?? 'application/json');
      ctx.setBody(JSON.stringify(req.body));
    }
    const timeout = AbortSignal.timeout(req.timeoutMs ?? 30_000);
    ctx.setSignal(req.signal ? AbortSignal.any([req.signal, timeout]) : timeout);
    await this.#kc.applySecurityAuthentication(ctx);
    const res = await this.#http.send(ctx).toPromise();
    const text = await res.body.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    if (res.httpStatusCode >= 200 && res.httpStatusCode < 300) return parsed as T;
    const status = isRecord(parsed) ? (parsed as KubeStatus) : undefined;
    throw new KubeApiError(
      res.httpStatusCode,
      status?.reason ?? 'Unknown',
      status?.message ?? (typeof parsed === 'string' ? parsed.slice(0, 200) : `${req.method} ${req.path}`),
      status ?? (typeof parsed === 'string' ? parsed : undefined),
    );
  }
}

// ---- discovery: apiVersion + kind → plural and scope -------------------------------------------

interface APIResource {
  name: string;
  kind: string;
  namespaced: boolean;
}

export interface ResourceInfo {
  group: string;
  version: string;
  plural: string;
  namespaced: boolean;
}

export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** Maps kinds to resources through API discovery, cached per group/version. */
export class RestMapper {
  readonly #client: KubeClient;
  readonly #cache = new Map<string, Map<string, ResourceInfo>>();

  constructor(client: KubeClient) {
    this.#client = client;
  }

  /** Add a mapping by hand (tests, or kinds whose discovery must not be needed). */
  register(apiVersion: string, kind: string, plural: string, namespaced: boolean): void {
    const gv = splitApiVersion(apiVersion);
    let m = this.#cache.get(apiVersion);
    if (!m) {
      m = new Map();
      this.#cache.set(apiVersion, m);
    }
    m.set(kind, { ...gv, plural, namespaced });
  }

  async resourceFor(apiVersion: string, kind: string): Promise<ResourceInfo> {
    const hit = this.#cache.get(apiVersion)?.get(kind);
    if (hit) return hit;
    // A miss re-reads discovery: the CRD may have been installed since the last read.
    const gv = splitApiVersion(apiVersion);
    const path = gv.group ? `/apis/${gv.group}/${gv.version}` : `/api/${gv.version}`;
    const list = await this.#client.request<{ resources?: APIResource[] }>({ method: 'GET', path });
    const m = new Map<string, ResourceInfo>();
    for (const r of list.resources ?? []) {
      if (r.name.includes('/')) continue; // subresources
      m.set(r.kind, { ...gv, plural: r.name, namespaced: r.namespaced });
    }
    this.#cache.set(apiVersion, m);
    const found = m.get(kind);
    if (!found)
      throw new KubeApiError(404, 'NotFound', `no resource for ${kind} in ${apiVersion}`, undefined);
    return found;
  }

  async pathFor(obj: KubernetesObject, subresource?: string): Promise<string> {
    if (!obj.apiVersion || !obj.kind || !obj.metadata?.name) {
      throw new Error('object needs apiVersion, kind and metadata.name');
    }
    const info = await this.resourceFor(obj.apiVersion, obj.kind);
    if (info.namespaced && !obj.metadata.namespace) {
      throw new Error(`${obj.kind} ${obj.metadata.name} is namespaced but has no metadata.namespace`);
    }
    const ref: ResourceRef = {
      group: info.group,
      version: info.version,
      plural: info.plural,
      ...(info.namespaced && obj.metadata.namespace ? { namespace: obj.metadata.namespace } : {}),
    };
    return resourcePath(ref, obj.metadata.name, subresource);
  }
}
