// The helm engine on a real node (issue 13, docs/engines.md "helm"): what an Upgrade's runner pod needs
// that a cluster would have.
//
// - The helm CLI runner image: hack/images/build.ts helmImage (bin/helm, built from the pinned Go module)
//   pushed to the node's registry; the Operation controller gets it as its RELATED_IMAGE_HELM.
// - A chart source pods reach (nothing here reaches the internet): a classic Helm chart repository,
//   index.yaml plus .tgz files made by the real helm CLI (`helm package`, `helm repo index`), served over
//   plain HTTP on the node address, which pods reach through their gateway (like the API server's
//   endpoint) and this process on the host. A classic repository needs no helm flag for plain HTTP
//   (an OCI registry would: `--plain-http`), so the adapter's command stays what a cluster runs.
// - The runner's least RBAC, as the namespace admin grants it (builders; the journey applies them).
// - For the Migration journey, the "database" the tiny chart's migration hooks migrate: a key-value
//   store under /state/ of the same server (GET a key: 200 and its value, or 404; POST: store the
//   body). busybox's wget cannot reach the API server instead: its TLS handshake with kube-apiserver
//   fails ("TLS error from peer (alert code 40): handshake failure").
//
// Memoized per node: the journeys on one node share one repository and one pushed image.
import { execFile } from 'node:child_process';
import { cpSync, createReadStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import YAML from 'yaml';
import { helmImage, pushBuilt } from '../../images/build.ts';
import { BIN, ROOT } from '../controlplane.ts';
import type { RealNode } from '../real-node.ts';

const run = promisify(execFile);

export const TINY_CHART_DIR = join(ROOT, 'test/fixtures/charts/tiny');
export const POSTGRES_CHART_DIR = join(ROOT, 'test/fixtures/charts/postgres');

/** One version of the tiny chart in the repository, with the chart default values it changes. */
export interface ChartVersion {
  version: string;
  /** Merged into the chart's values.yaml (its defaults) before packaging. */
  defaults?: Record<string, unknown>;
}

/**
 * The versions the journeys use: A and B render the same objects; BROKEN's default `broken: true`
 * renders an object the API server rejects, so upgrading to it fails (and `--atomic` rolls back).
 */
export const TINY_VERSIONS = {
  a: { version: '1.0.0' },
  b: { version: '1.1.0' },
  broken: { version: '1.2.0', defaults: { broken: true } },
} as const satisfies Record<string, ChartVersion>;

/**
 * The PostgreSQL chart's versions (the production journey, test/e2e/production/): each moves the schema
 * its migration hook applies; 1.2.0's hook refuses (an upgrade Helm must roll back), 1.3.0's sleeps
 * before it migrates (an upgrade to cancel while it runs), 1.4.0 migrates to schema 3, 1.5.0 to schema 4
 * (renames a column: a Safe Upgrade whose post-check fails), 1.6.0 stays on schema 3.
 */
export const POSTGRES_VERSIONS = {
  a: { version: '1.0.0', defaults: { migrations: { schema: 1 } } },
  b: { version: '1.1.0', defaults: { migrations: { schema: 2 } } },
  refused: { version: '1.2.0', defaults: { migrations: { schema: 3, fail: true } } },
  slow: { version: '1.3.0', defaults: { migrations: { schema: 3, sleepSeconds: 600 } } },
  c: { version: '1.4.0', defaults: { migrations: { schema: 3 } } },
  // Safe Upgrades (ADR 0055): 1.5.0 renames a column the post-check reads (schema 4); 1.6.0 changes nothing.
  breaking: { version: '1.5.0', defaults: { migrations: { schema: 4 } } },
  good: { version: '1.6.0', defaults: { migrations: { schema: 3 } } },
} as const satisfies Record<string, ChartVersion>;

/** What the chart repository served, and to whom (a pod's address is in the node's pod range). */
export interface ServedRequest {
  path: string;
  status: number;
  from: string;
}

export interface HelmEngine {
  /** `http://<node address>:<port>`: the chart repository (index.yaml, tiny-<version>.tgz). */
  repoUrl: string;
  /** The same server: the hooks' key-value store (the tiny chart's `migration.store`). */
  storeUrl: string;
  /** What the store holds, by key (`<namespace>/<release>/<name>`). */
  state: ReadonlyMap<string, string>;
  /** The helm runner image on the node's registry, by digest. */
  helmImage: string;
  /** Every request the repository answered, oldest first. */
  served: readonly ServedRequest[];
  stop(): Promise<void>;
}

/** Runs bin/helm with a private home under `home`. */
async function helmCli(home: string, args: string[]): Promise<string> {
  const bin = join(BIN, 'helm');
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`hack/build-tools.sh cluster\``);
  const { stdout } = await run(bin, args, {
    env: {
      ...process.env,
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_DATA_HOME: join(home, 'data'),
    },
  });
  return stdout;
}

/** values.yaml with `defaults` merged in (top level and one level down, enough for the fixtures). */
export function mergedValues(valuesYaml: string, defaults: Record<string, unknown> = {}): string {
  const values = (YAML.parse(valuesYaml) ?? {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(defaults)) {
    const cur = values[k];
    values[k] =
      v && typeof v === 'object' && !Array.isArray(v) && cur && typeof cur === 'object' && !Array.isArray(cur)
        ? { ...cur, ...v }
        : v;
  }
  return YAML.stringify(values);
}

/** Packages each version of `chartDir` into `outDir` with the real helm CLI; returns the .tgz names. */
export async function packageVersions(
  chartDir: string,
  versions: readonly ChartVersion[],
  outDir: string,
  home: string,
): Promise<string[]> {
  mkdirSync(outDir, { recursive: true });
  const out: string[] = [];
  for (const v of versions) {
    const src = join(home, 'src', v.version, basename(chartDir));
    cpSync(chartDir, src, { recursive: true });
    const values = join(src, 'values.yaml');
    if (v.defaults) writeFileSync(values, mergedValues(readFileSync(values, 'utf8'), v.defaults));
    const printed = await helmCli(home, ['package', src, '--version', v.version, '--destination', outDir]);
    out.push(basename(printed.trim().split(/\s+/).at(-1) ?? ''));
  }
  return out;
}

const STATE = '/state/';
/** Keys of the store: up to three path segments of DNS-label characters. */
const STATE_KEY = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(\/[a-z0-9]([-a-z0-9.]*[a-z0-9])?){0,2}$/;

/** The store's answer to one request; updates `state` on POST. Pure but for `state`. */
export function stateRequest(
  state: Map<string, string>,
  method: string,
  key: string,
  body: string,
): { status: number; body: string } {
  if (!STATE_KEY.test(key)) return { status: 400, body: 'bad key\n' };
  if (method === 'POST') {
    state.set(key, body);
    return { status: 201, body: '' };
  }
  if (method !== 'GET') return { status: 405, body: '' };
  const value = state.get(key);
  return value === undefined ? { status: 404, body: 'not found\n' } : { status: 200, body: value };
}

/** Serves the files of `dir` (GET only) and the store under /state/, recording each request. */
function serveDirectory(dir: string, served: ServedRequest[], state: Map<string, string>): Server {
  return createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path.startsWith(STATE)) {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size <= 4096) chunks.push(c);
      });
      req.on('end', () => {
        const answer = stateRequest(
          state,
          req.method ?? '',
          path.slice(STATE.length),
          Buffer.concat(chunks).toString(),
        );
        served.push({ path, status: answer.status, from: req.socket.remoteAddress ?? '' });
        res.writeHead(answer.status, { 'content-type': 'text/plain' }).end(answer.body);
      });
      return;
    }
    const file = join(dir, basename(path));
    const ok = req.method === 'GET' && path === `/${basename(path)}` && existsSync(file);
    served.push({ path, status: ok ? 200 : 404, from: req.socket.remoteAddress ?? '' });
    if (!ok) {
      res.writeHead(404).end();
      return;
    }
    const type = file.endsWith('.yaml') ? 'application/x-yaml' : 'application/gzip';
    res.writeHead(200, { 'content-type': type });
    createReadStream(file).pipe(res);
  });
}

const installed = new WeakMap<RealNode, Promise<HelmEngine>>();

/** The helm engine's parts on `node` (once per node). */
export function installHelm(node: RealNode, log: (m: string) => void = () => {}): Promise<HelmEngine> {
  let p = installed.get(node);
  if (!p) {
    p = install(node, log);
    installed.set(node, p);
  }
  return p;
}

async function install(node: RealNode, log: (m: string) => void): Promise<HelmEngine> {
  // Everything lives under the node's directory, which its cleanup removes.
  const dir = join(node.workdir, 'helm-engine');
  const charts = join(dir, 'charts');
  const home = join(dir, 'home');
  log(
    `helm (node ${node.workdir}): runner image (bin/helm) → node registry; tiny and postgres chart versions → chart repository ...`,
  );
  const image = helmImage(node.registryPrefix, 'engines', '0');
  pushBuilt(image, dir);
  await packageVersions(TINY_CHART_DIR, Object.values(TINY_VERSIONS), charts, home);
  await packageVersions(POSTGRES_CHART_DIR, Object.values(POSTGRES_VERSIONS), charts, home);
  const served: ServedRequest[] = [];
  const state = new Map<string, string>();
  const server = serveDirectory(charts, served, state);
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(0, node.nodeIp, () => ok());
  });
  server.unref(); // never what keeps a test process alive
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const repoUrl = `http://${node.nodeIp}:${port}`;
  await helmCli(home, ['repo', 'index', charts, '--url', repoUrl]);
  log(
    `helm: chart repository ${repoUrl} (${[
      ...Object.values(TINY_VERSIONS).map((v) => `tiny-${v.version}`),
      ...Object.values(POSTGRES_VERSIONS).map((v) => `postgres-${v.version}`),
    ].join(', ')})`,
  );
  return {
    repoUrl,
    storeUrl: repoUrl,
    state,
    helmImage: image.ref,
    served,
    // Closes the server; a later installHelm(node) starts anew.
    stop: () =>
      new Promise<void>((ok) => {
        installed.delete(node);
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

// ---- the runner's RBAC, as the namespace admin grants it ----------------------------------------------

export const RUNNER_SERVICE_ACCOUNT = 'vworkspace-runner';
export const HELM_RUNNER_ROLE = `${RUNNER_SERVICE_ACCOUNT}-helm`;

/** A resource the release renders, e.g. { apiGroup: '', resource: 'configmaps' }. */
export interface ReleaseResource {
  apiGroup: string;
  resource: string;
}

export function runnerServiceAccount(namespace: string): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: RUNNER_SERVICE_ACCOUNT, namespace } };
}

/**
 * The least a helm runner needs to upgrade (and, with --atomic, roll back) a release in `namespace`:
 * - Secrets: Helm's release records (its Secrets driver gets the current one, lists the history by
 *   label, creates the new revision, updates the old one to superseded, deletes revisions beyond
 *   --history-max);
 * - each kind the chart renders: get it, create it or apply a three-way merge patch, delete what the
 *   new version no longer renders (a rollback does the same towards the old version).
 * Charts whose workloads `--wait` follows need read access to those too (e.g. pods, deployments,
 * replicasets: get, list, watch); the tiny chart renders only ConfigMaps.
 */
export function helmRunnerRole(
  namespace: string,
  releaseResources: readonly ReleaseResource[],
  name = HELM_RUNNER_ROLE,
): Record<string, unknown> {
  const byGroup = new Map<string, string[]>();
  for (const r of releaseResources) byGroup.set(r.apiGroup, [...(byGroup.get(r.apiGroup) ?? []), r.resource]);
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name, namespace },
    rules: [
      { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'create', 'update', 'delete'] },
      ...[...byGroup].map(([group, resources]) => ({
        apiGroups: [group],
        resources: [...new Set(resources)].sort(),
        verbs: ['get', 'create', 'patch', 'delete'],
      })),
    ],
  };
}

/** Binds `role` to the runner ServiceAccount of `namespace`. */
export function runnerRoleBinding(namespace: string, role: string): Record<string, unknown> {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: role, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role },
    subjects: [{ kind: 'ServiceAccount', name: RUNNER_SERVICE_ACCOUNT, namespace }],
  };
}
