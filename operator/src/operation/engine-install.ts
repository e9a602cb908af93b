// Precondition EngineInstalled: the kinds an engine creates are served by the API server. Without it
// (Velero not installed, say) creating the child fails with a 404 the work queue would retry forever;
// instead the Operation says what to install (Accepted=False/EngineNotInstalled), waits the same grace
// period as a missing RBAC profile, and re-checks discovery meanwhile, so installing the engine lets it
// start without anyone touching it.
//
// Discovery (GET /apis/<group>/<version>) instead of a watch on CustomResourceDefinitions: every
// authenticated user may read discovery (system:discovery), so no new RBAC; one request per group/version
// per few seconds whatever the number of waiting Operations.

import type { Clock } from '@vworkspace/runtime';
import { isNotFound, type KubeClient, splitApiVersion } from '@vworkspace/runtime';
import type { Engine } from '../api/enums.ts';
import type { EngineAdapter } from '../engines/types.ts';

export type EngineFacts = { installed: true } | { installed: false; missing: readonly string[] };

/** How often an Operation waiting for its engine re-evaluates. */
export const ENGINE_RECHECK_MS = 15_000;
/** How long a discovery answer is reused: many Operations evaluated together cost one request. */
const DISCOVERY_TTL_MS = 5_000;

/** What to install, per engine (docs/install.md names the OperatorHub operators). */
const INSTALL: Record<Engine, string> = {
  velero:
    'install Velero (https://velero.io/docs/main/basic-install/; on OpenShift the OADP Operator from OperatorHub) with its CRDs',
  workflow:
    'install Argo Workflows (https://argo-workflows.readthedocs.io/en/latest/installation/; OperatorHub: Argo Workflows) with its CRDs',
  volsync: 'install VolSync (https://volsync.readthedocs.io/; OperatorHub: VolSync) with its CRDs',
  snapshot:
    'install the CSI snapshot CRDs and snapshot-controller (https://github.com/kubernetes-csi/external-snapshotter) and a CSI driver that supports snapshots',
  job: 'this API server does not serve batch/v1 Jobs; run the operator on a conformant cluster',
  helm: 'this API server does not serve batch/v1 Jobs; run the operator on a conformant cluster',
  helmHookJob: 'this API server does not serve batch/v1 Jobs; run the operator on a conformant cluster',
};

export function engineNotInstalledMessage(engine: Engine, missing: readonly string[]): string {
  return `engine ${engine} is not installed: the API server does not serve ${missing.join(', ')}; ${INSTALL[engine]}. The Operation starts by itself once they are served`;
}

/** Reads discovery for the child kinds of adapters; reuses an answer for DISCOVERY_TTL_MS. */
export class EngineDiscovery {
  readonly #client: KubeClient;
  readonly #clock: Clock;
  /** apiVersion → (served plurals, when read). */
  readonly #cache = new Map<string, { plurals: ReadonlySet<string>; at: number }>();

  constructor(client: KubeClient, clock: Clock) {
    this.#client = client;
    this.#clock = clock;
  }

  async check(adapter: EngineAdapter, signal?: AbortSignal): Promise<EngineFacts> {
    const missing: string[] = [];
    for (const k of adapter.childKinds) {
      const served = await this.#served(k.apiVersion, signal);
      if (!served.has(k.plural)) missing.push(`${k.kind} (${k.apiVersion})`);
    }
    return missing.length === 0 ? { installed: true } : { installed: false, missing };
  }

  async #served(apiVersion: string, signal?: AbortSignal): Promise<ReadonlySet<string>> {
    const now = this.#clock.now();
    const hit = this.#cache.get(apiVersion);
    if (hit && now - hit.at < DISCOVERY_TTL_MS) return hit.plurals;
    const gv = splitApiVersion(apiVersion);
    let plurals: Set<string>;
    try {
      const list = await this.#client.request<{ resources?: { name: string }[] }>({
        method: 'GET',
        path: gv.group ? `/apis/${gv.group}/${gv.version}` : `/api/${gv.version}`,
        ...(signal ? { signal } : {}),
      });
      plurals = new Set((list.resources ?? []).map((r) => r.name).filter((n) => !n.includes('/')));
    } catch (err) {
      // 404: the group/version is not served at all. Anything else is a transient API error: thrown.
      if (!isNotFound(err)) throw err;
      plurals = new Set();
    }
    this.#cache.set(apiVersion, { plurals, at: now });
    return plurals;
  }
}
