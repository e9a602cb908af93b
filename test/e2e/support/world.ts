// One OLM cluster per journey file: a kwok cluster (real etcd, kube-apiserver, controller-manager,
// scheduler; kwok plays the kubelet, so Deployments become available and CSVs can succeed), OLM's olm
// and catalog operators as host processes, and the e2e catalog (catalog.ts) served by `opm serve`
// behind the CatalogSource `vworkspace-e2e` with `spec.address`.
//
// Pods get IPs from a random /24 of 198.18.0.0/15 that is routed to this machine's loopback interface
// (hack/lib/loopback-route.ts; needs root), and the API server runs with --enable-aggregator-routing,
// so it calls a webhook Service at a pod IP of its EndpointSlices: a host process listening on that
// address (operator-pods.ts) receives exactly the calls the Pod would. The snapshot.storage.k8s.io
// CRDs are installed directly, as a cluster distribution ships them (no OLM package provides them and
// our bundle does not depend on them).
//
// Everything is torn down in stop(); the work directory (OLM, opm and operator logs, catalogs) is
// kept when a step failed (moved to bin/test-results/kept/, so a run leaves nothing in $TMPDIR) or where
// it is with VWS_KEEP_CLUSTER=1, and its path printed.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { KubeClient } from '@vworkspace/runtime';
import { afterAll, beforeAll, it } from 'vitest';
import { BIN } from '../../../hack/lib/controlplane.ts';
import { type KwokCluster, startKwokCluster } from '../../../hack/lib/kwok-cluster.ts';
import { type LoopbackRoute, routeLocalCidr } from '../../../hack/lib/loopback-route.ts';
import {
  applyCatalogSource,
  catalogSourcePath,
  OLM_NAMESPACE,
  type Olm,
  type OpmServer,
  serveCatalog,
  startOlm,
  waitCatalogSourceReady,
} from '../../../hack/lib/olm.ts';
import { tailFile } from '../../../hack/lib/process.ts';
import { testClient } from '../../support/clients.ts';
import { keepInTestResults } from '../../support/kept.ts';
import { buildCatalog, builtVersions } from './catalog.ts';
import { olmReport } from './olm-api.ts';
import { warmPodIpPool } from './pod-ip-pool.ts';

export const CATALOG_SOURCE = 'vworkspace-e2e';

const SNAPSHOT_CRDS = [
  'snapshot.storage.k8s.io_volumesnapshots.yaml',
  'snapshot.storage.k8s.io_volumesnapshotclasses.yaml',
  'snapshot.storage.k8s.io_volumesnapshotcontents.yaml',
].map((f) => join(BIN, 'crds', f));

export interface WorldOptions {
  /** Serve only our versions up to this one at first (publish the rest later with `publish`). */
  catalogUpTo?: string;
}

export class World {
  readonly journey: string;
  readonly workdir: string;
  readonly started = Date.now();
  cluster!: KwokCluster;
  kc!: KubeConfig;
  client!: KubeClient;
  route: LoopbackRoute | undefined;
  olm: Olm | undefined;
  opm: OpmServer | undefined;
  #catalogs = 0;
  failed = false;
  /** More report sections (operator processes, simulator) registered by the journey. */
  readonly reporters: (() => Promise<string> | string)[] = [];
  /** Torn down first, in reverse order of registration. */
  readonly #cleanups: { what: string; fn: () => Promise<void> }[] = [];

  private constructor(journey: string, workdir: string) {
    this.journey = journey;
    this.workdir = workdir;
  }

  /** Registers something the journey started, to stop (reverse order) before the cluster goes. */
  cleanup(what: string, fn: () => Promise<void>): void {
    this.#cleanups.push({ what, fn });
  }

  say(msg: string): void {
    const s = ((Date.now() - this.started) / 1000).toFixed(1).padStart(6);
    process.stdout.write(`[e2e ${this.journey} ${s}s] ${msg}\n`);
  }

  static async start(journey: string, opts: WorldOptions = {}): Promise<World> {
    const w = new World(journey, await mkdtemp(join(tmpdir(), `vws-e2e-${journey}-`)));
    try {
      w.route = await routeLocalCidr(w.workdir);
      w.say(
        `starting a kwok cluster (pod CIDR ${w.route.cidr}, routed to this machine; API server with --enable-aggregator-routing) ...`,
      );
      w.cluster = await startKwokCluster({
        name: `vws-e2e-${journey}-${Date.now().toString(36)}`,
        podCidr: w.route.cidr,
        apiServerArgs: { 'enable-aggregator-routing': 'true' },
        crdFiles: SNAPSHOT_CRDS,
      });
      w.kc = new KubeConfig();
      w.kc.loadFromFile(w.cluster.kubeconfigPath);
      w.client = testClient(w.kc);
      w.say(`kwok's pod-IP pool made by one Pod before OLM's (it got ${await warmPodIpPool(w.client)})`);
      w.say(
        'installing OLM (CRDs, namespaces olm and operators, global OperatorGroup) and starting its olm and catalog operators ...',
      );
      w.olm = await startOlm(w.cluster.kubeconfigPath, w.client, w.workdir);
      w.say(`OLM running (logs: ${w.olm.procs.map((p) => p.logPath).join(', ')})`);
      await w.publish(opts.catalogUpTo);
      return w;
    } catch (err) {
      w.failed = true;
      process.stdout.write(`${await w.report()}\n`);
      await w.stop();
      throw err;
    }
  }

  /**
   * Builds the catalog (our versions up to `upTo`, or all), serves it with a new `opm serve` and
   * points the CatalogSource at it; the previous server stops once OLM is connected to the new one.
   */
  async publish(upTo?: string): Promise<string[]> {
    const n = ++this.#catalogs;
    const dir = join(this.workdir, `catalog-${n}`);
    buildCatalog(dir, upTo === undefined ? {} : { upTo });
    const versions = builtVersions(dir);
    const previous = this.opm;
    this.opm = await serveCatalog(dir, join(this.workdir, `opm-serve-${n}.log`));
    await applyCatalogSource(this.client, CATALOG_SOURCE, this.opm.address);
    await waitCatalogSourceReady(this.client, CATALOG_SOURCE, this.opm.address);
    await previous?.stop();
    this.say(
      `catalog ${n} served by opm serve at ${this.opm.address} (vworkspace-operator ${versions.join(', ')} + providers); CatalogSource ${OLM_NAMESPACE}/${CATALOG_SOURCE} READY`,
    );
    return versions;
  }

  /** What a failed step needs: OLM objects and conditions, the catalog connection, every log's tail. */
  async report(): Promise<string> {
    const parts = [`===== e2e ${this.journey}: state at failure (work directory ${this.workdir}) =====`];
    if (this.client) {
      parts.push(await olmReport(this.client).catch((e: unknown) => `OLM objects: ${String(e)}`));
      const cs = await this.client
        .request<{ status?: unknown }>({
          method: 'GET',
          path: catalogSourcePath(OLM_NAMESPACE, CATALOG_SOURCE),
        })
        .catch(() => undefined);
      parts.push(`CatalogSource status: ${JSON.stringify(cs?.status ?? null)}`);
    }
    for (const r of this.reporters) parts.push(await Promise.resolve(r()).catch((e: unknown) => String(e)));
    if (this.olm) parts.push(this.olm.logs(60));
    if (this.opm) parts.push(`--- ${this.opm.proc.logPath} ---\n${tailFile(this.opm.proc.logPath, 20)}`);
    return parts.join('\n');
  }

  async stop(): Promise<void> {
    this.say('tearing down ...');
    for (const c of [...this.#cleanups].reverse()) {
      await c.fn().catch((err: unknown) => this.say(`  stopping ${c.what} failed: ${String(err)}`));
      this.say(`  ${c.what} stopped`);
    }
    await this.opm?.stop();
    await this.olm?.stop();
    this.say('  opm serve and OLM stopped');
    await this.cluster?.stop();
    await this.route?.release();
    if (process.env.VWS_KEEP_CLUSTER === '1') this.say(`work directory kept: ${this.workdir}`);
    else if (this.failed) this.say(`work directory kept: ${await keepInTestResults(this.workdir)}`);
    else await rm(this.workdir, { recursive: true, force: true });
    this.say(`done (wall time of this file ${((Date.now() - this.started) / 1000).toFixed(0)} s)`);
  }
}

/**
 * One journey file: its World, started before the first step and stopped after the last, and its
 * steps. A step is a vitest test that runs only when the World started and every earlier step passed
 * (a later step builds on what the earlier ones did: it fails, never skips, when one did not), and
 * prints the World's report when it fails.
 */
export class Journey {
  readonly name: string;
  world: World | undefined;
  #startError: unknown;

  constructor(name: string, opts: WorldOptions & { onStart?: (w: World) => void } = {}) {
    this.name = name;
    beforeAll(async () => {
      try {
        this.world = await World.start(name, opts);
        opts.onStart?.(this.world);
      } catch (err) {
        this.#startError = err;
      }
    });
    afterAll(async () => {
      await this.world?.stop();
    });
  }

  step(name: string, fn: (w: World) => Promise<void>): void {
    it(name, async () => {
      const w = this.world;
      if (!w)
        throw new Error(
          `the OLM cluster did not start: ${this.#startError instanceof Error ? this.#startError.stack : String(this.#startError)}`,
        );
      if (w.failed) throw new Error('not run: an earlier step of this journey failed');
      w.say(`--- ${name}`);
      try {
        await fn(w);
      } catch (err) {
        w.failed = true;
        process.stdout.write(`${await w.report()}\n`);
        throw err;
      }
    });
  }
}
