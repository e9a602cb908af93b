// A small JSON REST client over a kubeconfig's TLS and auth (kubeconfig.ts), with its own transport.
// The runtime reads and writes raw JSON exactly as the API server sends it: the generated typed
// clients turn timestamps into Date objects on some paths and not others, cannot reach every
// subresource with every patch type, and we need the same shapes from list, watch and get.
// Failures are thrown as KubeApiError, with `code` and `body` where client-node's ApiException has
// them, so the helpers below read errors from this client and from the generated ones alike.
//
// Transport, as client-go does it: ONE keep-alive connection pool per client (client-node 2.x builds
// a new undici Agent, so a new TCP+TLS connection, for every request: several times the latency and
// the API server's CPU per call), and a client-side token bucket (QPS/burst, client-go's defaults
// 20/30) so a busy controller queues behind its own budget instead of flooding the API server.

import type { Agent as HttpsAgent, RequestOptions } from 'node:https';
import type { KubeConfig, KubernetesObject, RequestContext } from '@kubernetes/client-node';
import { Agent, type Dispatcher, request as undiciRequest } from 'undici';
import { type Clock, realClock, sleep } from './clock.ts';
import type { KubeConfigLike } from './kubeconfig.ts';
import { BucketRateLimiter } from './rate-limiter.ts';

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

/**
 * An error answer of the API server. `code` (the HTTP status) and `body` are where client-node's
 * ApiException keeps them, so the helpers below read errors of the generated clients the same way.
 */
export class KubeApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly body: KubeStatus | string | undefined;

  constructor(code: number, reason: string, message: string, body: KubeStatus | string | undefined) {
    super(`${code} ${reason}: ${message}`);
    this.name = 'KubeApiError';
    this.code = code;
    this.reason = reason;
    this.body = body;
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

/** Hooks for client-go's rest_client_* metrics (see metrics.ts). Durations in seconds. */
export interface RestClientMetrics {
  /** Time spent waiting for the client-side rate limiter. */
  rateLimited(verb: string, seconds: number): void;
  /** A finished request: its HTTP code ('<error>' when none came back) and total latency. */
  request(verb: string, code: string, seconds: number): void;
}

export interface RestClientOptions {
  /** Requests per second this client may send on average; 0 or less: no client-side limit. Default 20. */
  qps?: number;
  /** Requests that may go at once before the QPS applies. Default 30 (at least 1). */
  burst?: number;
  /** Open connections per API server (requests beyond it wait for one). Default 64. */
  maxConnections?: number;
  clock?: Clock;
  metrics?: RestClientMetrics;
}

/** client-go's defaults for rest.Config (and kube-controller-manager's --kube-api-qps/burst). */
export const DEFAULT_QPS = 20;
export const DEFAULT_BURST = 30;

// Auth headers come from the kubeconfig (a token file re-read once a minute, or client-node's
// authenticators: exec plugins, OIDC, which cache and refresh tokens themselves); asking it once a
// second keeps file reads off the hot path.
const HEADER_TTL_MS = 1_000;

interface Transport {
  dispatcher: Dispatcher;
  url: string;
}

/** A watch request: GET `path` with `query` (watch=true is added), streamed event by event. */
export interface WatchRequest {
  path: string;
  query: Record<string, QueryValue>;
  /** Default application/json; e.g. PARTIAL_OBJECT_METADATA for metadata-only events. */
  accept?: string;
  signal: AbortSignal;
}

/** Streams a watch: resolves when the server ends it or `signal` aborts, rejects on any failure. */
export interface KubeWatcher {
  watch(req: WatchRequest, onEvent: (type: string, obj: unknown) => void): Promise<void>;
}

/** client-node's KubeConfig, for the transport it alone has (HTTP and SOCKS proxies). */
function clientNodeConfig(kc: KubeConfigLike): KubeConfig {
  if (!('applySecurityAuthentication' in kc))
    throw new Error(
      "a kubeconfig with a proxy-url needs client-node's KubeConfig (loadKubeConfig gives one)",
    );
  return kc as KubeConfig;
}

/**
 * One request's signal: aborted by the caller's signal or after `ms`, whichever comes first; `done()`
 * frees both once the request ended. Not `AbortSignal.any([caller, AbortSignal.timeout(ms)])`: the caller's
 * signal is usually a controller's, alive for the process, and every composite made from it stays
 * registered with it until garbage-collected: in a burst of requests that cleanup was a visible share of
 * the operator's CPU (bench operations; docs/performance.md).
 */
export function requestSignal(
  caller: AbortSignal | undefined,
  ms: number,
): { signal: AbortSignal; done(): void } {
  const own = new AbortController();
  const timer = setTimeout(
    () => own.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    ms,
  );
  const onAbort = () => own.abort(caller?.reason);
  if (caller?.aborted) onAbort();
  else caller?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: own.signal,
    done: () => {
      clearTimeout(timer);
      caller?.removeEventListener('abort', onAbort);
    },
  };
}

export class RestClient implements KubeClient, KubeWatcher {
  readonly #kc: KubeConfigLike;
  readonly #opts: RestClientOptions;
  readonly #clock: Clock;
  readonly #limiter: BucketRateLimiter<undefined> | undefined;
  #transport: Promise<Transport | undefined> | undefined;
  #headers: { at: number; value: Promise<Record<string, string>> } | undefined;

  constructor(kc: KubeConfigLike, opts: RestClientOptions = {}) {
    this.#kc = kc;
    this.#opts = opts;
    this.#clock = opts.clock ?? realClock;
    const qps = opts.qps ?? DEFAULT_QPS;
    this.#limiter =
      qps > 0
        ? new BucketRateLimiter<undefined>(this.#clock, qps, Math.max(1, opts.burst ?? DEFAULT_BURST))
        : undefined;
  }

  get kubeConfig(): KubeConfigLike {
    return this.#kc;
  }

  /** Closes the connection pool (idle connections never keep the process alive anyway). */
  async close(): Promise<void> {
    const t = await this.#transport?.catch(() => undefined);
    await t?.dispatcher.close();
  }

  async request<T = unknown>(req: KubeRequest): Promise<T> {
    const cluster = this.#kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    const started = performance.now();
    await this.#throttle(req.method, req.signal);
    let code = '<error>';
    try {
      const res = await this.#send(cluster.server, req);
      code = String(res.status);
      const parsed = parseBody(res.text);
      if (res.status >= 200 && res.status < 300) return parsed as T;
      throw apiError(res.status, parsed, `${req.method} ${req.path}`);
    } finally {
      this.#opts.metrics?.request(req.method, code, (performance.now() - started) / 1000);
    }
  }

  async watch(req: WatchRequest, onEvent: (type: string, obj: unknown) => void): Promise<void> {
    await this.#throttle('WATCH', req.signal);
    const transport = await this.#transportOnce();
    if (!transport) return this.#watchFallback(req, onEvent);
    const url = urlOf(transport, req.path, { ...req.query, watch: true });
    const started = performance.now();
    let code = '<error>';
    let res: Dispatcher.ResponseData;
    try {
      res = await undiciRequest(url, {
        method: 'GET',
        headers: { ...(await this.#authHeaders()), accept: req.accept ?? 'application/json' },
        dispatcher: transport.dispatcher,
        signal: req.signal,
        headersTimeout: 60_000,
        // A watch is quiet for as long as nothing changes; the server ends it (timeoutSeconds).
        bodyTimeout: 0,
      });
      code = String(res.statusCode);
    } finally {
      this.#opts.metrics?.request('WATCH', code, (performance.now() - started) / 1000);
    }
    if (res.statusCode < 200 || res.statusCode >= 300)
      throw apiError(res.statusCode, parseBody(await res.body.text()), `watch ${req.path}`);
    // One JSON event per line ({"type": …, "object": …}); a line may span chunks.
    const emit = (line: string) => {
      if (!line.trim()) return;
      const ev = JSON.parse(line) as { type?: unknown; object?: unknown };
      onEvent(String(ev.type), ev.object);
    };
    res.body.setEncoding('utf8');
    let rest = '';
    for await (const chunk of res.body as AsyncIterable<string>) {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) emit(line);
    }
    emit(rest);
  }

  async #throttle(verb: string, signal: AbortSignal | undefined): Promise<void> {
    if (!this.#limiter) return;
    const wait = this.#limiter.when(undefined);
    if (wait <= 0) return;
    await sleep(this.#clock, wait, signal);
    this.#opts.metrics?.rateLimited(verb, wait / 1000);
    signal?.throwIfAborted();
  }

  async #send(server: string, req: KubeRequest): Promise<{ status: number; text: string }> {
    const transport = await this.#transportOnce();
    const deadline = requestSignal(req.signal, req.timeoutMs ?? 30_000);
    try {
      return await this.#sendWithin(server, req, transport, deadline.signal);
    } finally {
      deadline.done();
    }
  }

  async #sendWithin(
    server: string,
    req: KubeRequest,
    transport: Transport | undefined,
    signal: AbortSignal,
  ): Promise<{ status: number; text: string }> {
    if (!transport) return this.#sendFallback(server, req, signal);
    const url = urlOf(transport, req.path, req.query ?? {});
    const headers: Record<string, string> = {
      ...(await this.#authHeaders()),
      accept: req.accept ?? 'application/json',
    };
    let body: string | undefined;
    if (req.body !== undefined) {
      headers['content-type'] = req.contentType ?? 'application/json';
      body = JSON.stringify(req.body);
    }
    const res = await undiciRequest(url, {
      method: req.method,
      headers,
      ...(body !== undefined ? { body } : {}),
      dispatcher: transport.dispatcher,
      signal,
    });
    return { status: res.statusCode, text: await res.body.text() };
  }

  // Through a proxy: client-node's own transport, imported only then (it is large; see kubeconfig.ts).
  async #sendFallback(
    server: string,
    req: KubeRequest,
    signal: AbortSignal,
  ): Promise<{ status: number; text: string }> {
    const kc = clientNodeConfig(this.#kc);
    const { RequestContext, HttpMethod, IsomorphicFetchHttpLibrary } = await import(
      '@kubernetes/client-node'
    );
    const ctx = new RequestContext(`${server}${req.path}`, HttpMethod[req.method]);
    for (const [k, v] of Object.entries(req.query ?? {}))
      if (v !== undefined) ctx.setQueryParam(k, String(v));
    ctx.setHeaderParam('Accept', req.accept ?? 'application/json');
    if (req.body !== undefined) {
      ctx.setHeaderParam('Content-Type', req.contentType ?? 'application/json');
      ctx.setBody(JSON.stringify(req.body));
    }
    ctx.setSignal(signal);
    await kc.applySecurityAuthentication(ctx);
    const res = await new IsomorphicFetchHttpLibrary().send(ctx).toPromise();
    return { status: res.httpStatusCode, text: await res.body.text() };
  }

  async #watchFallback(req: WatchRequest, onEvent: (type: string, obj: unknown) => void): Promise<void> {
    const kc = clientNodeConfig(this.#kc);
    const { Watch } = await import('@kubernetes/client-node');
    // client-node's Watch has no header option: a derived config sets Accept after authenticating.
    const derived = Object.create(kc) as KubeConfig;
    derived.applySecurityAuthentication = async (ctx: RequestContext) => {
      await kc.applySecurityAuthentication(ctx);
      if (req.accept) ctx.setHeaderParam('Accept', req.accept);
    };
    const query: Record<string, string | number | boolean> = {};
    for (const [k, v] of Object.entries(req.query)) if (v !== undefined) query[k] = v;
    return new Promise<void>((resolve, reject) => {
      let controller: AbortController | undefined;
      const onAbort = () => controller?.abort();
      req.signal.addEventListener('abort', onAbort, { once: true });
      const finish = (err: unknown) => {
        req.signal.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve();
      };
      new Watch(derived).watch(req.path, query, onEvent, finish).then((c) => {
        controller = c;
        if (req.signal.aborted) c.abort();
      }, finish);
    });
  }

  /** The pool, built once from the kubeconfig's TLS settings; undefined: through a proxy (client-node's transport). */
  #transportOnce(): Promise<Transport | undefined> {
    this.#transport ??= (async () => {
      const cluster = this.#kc.getCurrentCluster();
      if (!cluster) throw new Error('kubeconfig has no current cluster');
      if (cluster.proxyUrl) return undefined;
      const https: RequestOptions = {};
      await this.#kc.applyToHTTPSOptions(https);
      const tls: ConstructorParameters<typeof HttpsAgent>[0] = {
        ...(https.ca !== undefined ? { ca: https.ca } : {}),
        ...(https.cert !== undefined ? { cert: https.cert } : {}),
        ...(https.key !== undefined ? { key: https.key } : {}),
        ...(https.pfx !== undefined ? { pfx: https.pfx } : {}),
        ...(https.passphrase !== undefined ? { passphrase: https.passphrase } : {}),
        ...(https.rejectUnauthorized !== undefined ? { rejectUnauthorized: https.rejectUnauthorized } : {}),
        ...(https.servername !== undefined ? { servername: https.servername } : {}),
      };
      const dispatcher = new Agent({
        // TCP keep-alive probes after 30 s idle, as client-go (and client-node) set them.
        connect: { ...tls, keepAlive: true, keepAliveInitialDelay: 30_000 } as Agent.Options['connect'],
        connections: this.#opts.maxConnections ?? 64,
        // Keep idle connections for a minute (undici's default is 4 s), so a quiet controller's next
        // request does not pay a new TLS handshake.
        keepAliveTimeout: 60_000,
        keepAliveMaxTimeout: 600_000,
      });
      return { dispatcher, url: cluster.server.replace(/\/+$/, '') };
    })();
    return this.#transport;
  }

  #authHeaders(): Promise<Record<string, string>> {
    const now = this.#clock.now();
    if (!this.#headers || now - this.#headers.at >= HEADER_TTL_MS || now < this.#headers.at) {
      const value = (async () => {
        const o: RequestOptions = {};
        await this.#kc.applyToHTTPSOptions(o);
        const out: Record<string, string> = {};
        for (const [k, v] of Object.entries(o.headers ?? {})) if (v !== undefined) out[k] = String(v);
        const user = this.#kc.getCurrentUser();
        if (user?.username)
          out.authorization = `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}`;
        return out;
      })();
      // A failed lookup (exec plugin error) must not be cached.
      value.catch(() => {
        if (this.#headers?.value === value) this.#headers = undefined;
      });
      this.#headers = { at: now, value };
    }
    return this.#headers.value;
  }
}

function urlOf(transport: Transport, path: string, query: Record<string, QueryValue>): URL {
  const url = new URL(`${transport.url}${path}`);
  for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
  return url;
}

/** A response body as JSON when it is JSON, else the text itself (undefined when empty). */
function parseBody(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function apiError(status: number, parsed: unknown, what: string): KubeApiError {
  const body = isRecord(parsed) ? (parsed as KubeStatus) : undefined;
  return new KubeApiError(
    status,
    body?.reason ?? 'Unknown',
    body?.message ?? (typeof parsed === 'string' && parsed ? parsed.slice(0, 200) : what),
    body ?? (typeof parsed === 'string' ? parsed : undefined),
  );
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
