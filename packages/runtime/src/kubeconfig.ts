// Where the API server is and how to authenticate, without loading @kubernetes/client-node: its index
// builds every generated API and model class at import (tens of MiB resident in an operator that uses
// none of them; bench footprint, docs/performance.md). The operator needs two shapes, both
// read here: the in-cluster ServiceAccount (its token re-read once a minute, as client-go does, so a
// rotated projected token is picked up) and a kubeconfig whose user is a client certificate or a
// bearer token. Anything else a kubeconfig can say (exec plugins, auth providers, basic auth, proxies,
// impersonation, several files in KUBECONFIG) is handed to client-node's own loader, imported only then.
//
// The runtime takes any object with the three methods below (`KubeConfigLike`): client-node's
// KubeConfig has them, so tests and the CLI keep passing theirs.

import { existsSync, readFileSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { isIPv6 } from 'node:net';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import type { Cluster, User } from '@kubernetes/client-node';
import { parse } from 'yaml';

/** What the runtime's REST client reads from a kubeconfig (client-node's KubeConfig has all three). */
export interface KubeConfigLike {
  getCurrentCluster(): Cluster | null;
  getCurrentUser(): User | null;
  /** Sets TLS options (ca, cert, key, rejectUnauthorized, servername) and auth headers on `opts`. */
  applyToHTTPSOptions(opts: RequestOptions): Promise<void>;
}

export const SERVICEACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** client-go reloads the ServiceAccount token file this often (cachingTokenSource). */
const TOKEN_RELOAD_MS = 60_000;

interface LiteCluster {
  server: string;
  ca?: Buffer;
  skipTLSVerify?: boolean;
  tlsServerName?: string;
}

interface LiteUser {
  cert?: Buffer;
  key?: Buffer;
  token?: string;
  tokenFile?: string;
}

/** A kubeconfig of the two shapes above, read once (the token file: once a minute). */
export class LiteKubeConfig implements KubeConfigLike {
  readonly #cluster: LiteCluster;
  readonly #user: LiteUser;
  readonly #now: () => number;
  #token: { value: string; at: number } | undefined;

  constructor(cluster: LiteCluster, user: LiteUser, now: () => number = Date.now) {
    this.#cluster = cluster;
    this.#user = user;
    this.#now = now;
  }

  getCurrentCluster(): Cluster {
    return {
      name: 'current',
      server: this.#cluster.server,
      skipTLSVerify: this.#cluster.skipTLSVerify ?? false,
      ...(this.#cluster.tlsServerName ? { tlsServerName: this.#cluster.tlsServerName } : {}),
    };
  }

  getCurrentUser(): User {
    return { name: 'current' };
  }

  async applyToHTTPSOptions(opts: RequestOptions): Promise<void> {
    if (this.#cluster.ca) opts.ca = this.#cluster.ca;
    if (this.#cluster.skipTLSVerify) opts.rejectUnauthorized = false;
    if (this.#cluster.tlsServerName) opts.servername = this.#cluster.tlsServerName;
    if (this.#user.cert) opts.cert = this.#user.cert;
    if (this.#user.key) opts.key = this.#user.key;
    const token = this.#bearer();
    if (token) opts.headers = { ...opts.headers, Authorization: `Bearer ${token}` };
  }

  #bearer(): string | undefined {
    if (this.#user.token) return this.#user.token;
    const file = this.#user.tokenFile;
    if (!file) return undefined;
    const now = this.#now();
    if (!this.#token || now - this.#token.at >= TOKEN_RELOAD_MS || now < this.#token.at)
      this.#token = { value: readFileSync(file, 'utf8').trim(), at: now };
    return this.#token.value;
  }
}

/** The in-cluster ServiceAccount's config (client-go's rest.InClusterConfig), `dir` its mount. */
export function inClusterConfig(env: NodeJS.ProcessEnv, dir = SERVICEACCOUNT_DIR): LiteKubeConfig {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port)
    throw new Error('in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set');
  return new LiteKubeConfig(
    { server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`, ca: readFileSync(join(dir, 'ca.crt')) },
    { tokenFile: join(dir, 'token') },
  );
}

type Yaml = Record<string, unknown>;
const isRecord = (v: unknown): v is Yaml => typeof v === 'object' && v !== null && !Array.isArray(v);

function named(list: unknown, name: unknown, key: string): Yaml | undefined {
  if (!Array.isArray(list)) return undefined;
  const entry = list.find((e) => isRecord(e) && e.name === name);
  return isRecord(entry) && isRecord(entry[key]) ? entry[key] : undefined;
}

const CLUSTER_FIELDS = new Set([
  'server',
  'certificate-authority',
  'certificate-authority-data',
  'insecure-skip-tls-verify',
  'tls-server-name',
  'extensions',
]);
const USER_FIELDS = new Set([
  'client-certificate',
  'client-certificate-data',
  'client-key',
  'client-key-data',
  'token',
  'tokenFile',
  'extensions',
]);

/**
 * Reads a kubeconfig file's current context if it is of the supported shapes; undefined when it says
 * anything this loader does not implement (the caller then uses client-node's loader).
 */
export function parseKubeConfig(path: string): LiteKubeConfig | undefined {
  const doc: unknown = parse(readFileSync(path, 'utf8'));
  if (!isRecord(doc)) throw new Error(`kubeconfig ${path}: not a YAML mapping`);
  const context = named(doc.contexts, doc['current-context'], 'context');
  if (!context) return undefined;
  const cluster = named(doc.clusters, context.cluster, 'cluster');
  const user = context.user === undefined ? {} : named(doc.users, context.user, 'user');
  if (!cluster || !user || typeof cluster.server !== 'string') return undefined;
  if (Object.keys(cluster).some((k) => !CLUSTER_FIELDS.has(k))) return undefined;
  if (Object.keys(user).some((k) => !USER_FIELDS.has(k))) return undefined;
  // Relative paths are relative to the kubeconfig's own directory, as kubectl resolves them.
  const resolve = (p: unknown) => (isAbsolute(String(p)) ? String(p) : join(dirname(path), String(p)));
  const bytes = (data: unknown, p: unknown): Buffer | undefined =>
    typeof data === 'string'
      ? Buffer.from(data, 'base64')
      : p !== undefined
        ? readFileSync(resolve(p))
        : undefined;
  const ca = bytes(cluster['certificate-authority-data'], cluster['certificate-authority']);
  const cert = bytes(user['client-certificate-data'], user['client-certificate']);
  const key = bytes(user['client-key-data'], user['client-key']);
  const tokenFile = typeof user.tokenFile === 'string' ? resolve(user.tokenFile) : undefined;
  return new LiteKubeConfig(
    {
      server: cluster.server,
      ...(ca ? { ca } : {}),
      ...(cluster['insecure-skip-tls-verify'] === true ? { skipTLSVerify: true } : {}),
      ...(typeof cluster['tls-server-name'] === 'string'
        ? { tlsServerName: cluster['tls-server-name'] }
        : {}),
    },
    {
      ...(cert ? { cert } : {}),
      ...(key ? { key } : {}),
      ...(typeof user.token === 'string' ? { token: user.token } : {}),
      ...(tokenFile ? { tokenFile } : {}),
    },
  );
}

/**
 * The config client-go's loading rules pick: KUBECONFIG, else ~/.kube/config, else the in-cluster
 * ServiceAccount. Shapes this file does not read go to client-node's KubeConfig.loadFromDefault.
 */
export async function loadKubeConfig(
  env: NodeJS.ProcessEnv = process.env,
  home: string = homedir(),
  serviceAccountDir = SERVICEACCOUNT_DIR,
): Promise<KubeConfigLike> {
  const files = (env.KUBECONFIG ?? '').split(delimiter).filter(Boolean);
  const path = files.length > 0 ? files[0] : join(home, '.kube', 'config');
  if (path && files.length <= 1 && (files.length === 1 || existsSync(path))) {
    const lite = parseKubeConfig(path);
    if (lite) return lite;
  } else if (files.length === 0 && existsSync(join(serviceAccountDir, 'token'))) {
    return inClusterConfig(env, serviceAccountDir);
  }
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}
