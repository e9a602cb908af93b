// What an engine adapter needs to know about the world besides the Operation (EngineEnvironment): the
// target's PVCs, a restore's snapshots or velero Backup, a Migration's Job or hooks, a WorkflowTemplate's
// ServiceAccounts, a helm release's state. Only reads; each one only when the engine and the moment need
// it (a running Operation reads no release record).
import type { KubernetesObject } from '@kubernetes/client-node';
import { isNotFound, type KubeClient, resourcePath, statusCode } from '@vworkspace/runtime';
import { LABEL_HELM_INSTANCE, LABEL_INSTANCE, LABEL_OPERATION_NAMESPACE } from '../api/annotations.ts';
import type { ApplicationInstance } from '../api/applicationinstance.ts';
import type { Operation } from '../api/operation.ts';
import type { Safety } from '../catalog/template.ts';
import { MIGRATION_CONFIGMAP_KEY, migrationConfigMapName } from '../engines/helm-hook-job.ts';
import { isSafeUpgrade } from '../engines/helm-safe.ts';
import { jobFinished } from '../engines/runner-pod.ts';
import type { EngineEnvironment } from '../engines/types.ts';
import { volsyncBackupRecords } from '../engines/volsync-verify.ts';
import { workflowTemplateServiceAccounts } from '../engines/workflow.ts';
import { releaseRef } from '../release/ref.ts';
import { mayMaterialize } from './decide.ts';
import { readReleaseHooks } from './release-hooks.ts';
import { readHookJobs, readReleaseState } from './release-state.ts';
import { readDrillFacts, readRestoreFacts } from './restore-facts.ts';
import { asRestoreBackup, newestBackup, type RestoreBackup, sourceNamespace } from './restore-source.ts';

export class EnvironmentReader {
  readonly veleroNamespace: string;
  readonly #client: KubeClient;
  readonly #helmImage: string | undefined;
  readonly #parametersOf: (op: Operation) => Record<string, unknown>;
  readonly #safetyOf: (op: Operation) => Safety | undefined;
  readonly #operations: (op: Operation) => readonly Operation[];

  constructor(opts: {
    client: KubeClient;
    veleroNamespace: string;
    helmImage?: string | undefined;
    /** spec.parameters as decide resolves them ({} when they do not resolve). */
    parametersOf: (op: Operation) => Record<string, unknown>;
    /** The resolved template's `safety` (a Safe Upgrade, ADR 0055); undefined for every other Operation. */
    safetyOf?: (op: Operation) => Safety | undefined;
    /** The cached Operations on `op`'s target (at least): a volsync Verify's Backups. */
    operations?: (op: Operation) => readonly Operation[];
  }) {
    this.#client = opts.client;
    this.veleroNamespace = opts.veleroNamespace;
    this.#helmImage = opts.helmImage;
    this.#parametersOf = opts.parametersOf;
    this.#safetyOf = opts.safetyOf ?? (() => undefined);
    this.#operations = opts.operations ?? (() => []);
  }

  /** The environment of an Operation that decides nothing outside its own status (ended or paused). */
  minimal(): EngineEnvironment {
    return { veleroNamespace: this.veleroNamespace };
  }

  async read(
    op: Operation,
    target: ApplicationInstance | undefined,
    children: readonly KubernetesObject[],
    signal: AbortSignal,
    backup?: RestoreBackup,
  ): Promise<EngineEnvironment> {
    const env: EngineEnvironment = {
      veleroNamespace: this.veleroNamespace,
      ...(this.#helmImage ? { helmImage: this.#helmImage } : {}),
    };
    if (!target) return env;
    const release = releaseRef(target);
    const ns = op.metadata.namespace ?? '';
    if (op.spec.engine === 'snapshot' && op.spec.type === 'Restore') {
      const facts = await readRestoreFacts(
        this.#client,
        ns,
        { release: release.name, withSnapshots: mayMaterialize(op, children) },
        signal,
      );
      if (facts) env.restore = facts;
    } else if (op.spec.engine === 'snapshot' && op.spec.type === 'Verify') {
      // A drill's snapshots and the claims they were of, read only while a child may be made.
      if (mayMaterialize(op, children)) {
        const facts = await readDrillFacts(
          this.#client,
          ns,
          { release: release.name, instance: op.spec.targetRef.name },
          signal,
        );
        if (facts) env.restore = facts;
      }
    } else if (op.spec.engine === 'volsync' && op.spec.type === 'Verify') {
      // A drill sizes each restored copy by its claim, and restores what a Backup of the instance wrote.
      const claims = await this.#releaseClaims(ns, release.name, signal);
      env.pvcs = claims.map((p) => p.metadata?.name ?? '').sort();
      if (mayMaterialize(op, children)) {
        env.releaseClaims = claims;
        env.volsyncBackups = volsyncBackupRecords(this.#operations(op), op.spec.targetRef.name);
      }
    } else if (op.spec.engine === 'volsync' || op.spec.engine === 'snapshot') {
      env.pvcs = await this.#releasePvcs(ns, release.name, signal);
    }
    // What the Migration runs is read only when a child may be made (not started yet, or a retry):
    // the release record is a Secret, and a running sequence needs nothing more from it.
    if (op.spec.engine === 'helmHookJob' && mayMaterialize(op, children)) {
      const name = migrationConfigMapName({ parameters: this.#parametersOf(op) });
      if (name) {
        const cm = await this.#readOptional<{ data?: Record<string, string> }>(
          resourcePath({ group: '', version: 'v1', plural: 'configmaps', namespace: ns }, name),
          signal,
        );
        // Parsed by the adapter, as untrusted text: a broken one ends the Operation with a condition.
        const text = cm?.data?.[MIGRATION_CONFIGMAP_KEY];
        if (text) env.migrationJobYaml = text;
      } else if (release.namespace === ns) {
        env.releaseHooks = await readReleaseHooks(this.#client, ns, release.name, signal);
      }
    }
    // The WorkflowTemplate's own ServiceAccounts (workflow.ts refuses those outside the template's list).
    // A ClusterWorkflowTemplate is the platform's, reached only through a template that allows it.
    const wfRef = op.spec.engine === 'workflow' ? this.#parametersOf(op).workflowTemplateRef : undefined;
    if (
      wfRef !== null &&
      typeof wfRef === 'object' &&
      !Array.isArray(wfRef) &&
      typeof (wfRef as { name?: unknown }).name === 'string' &&
      (wfRef as { clusterScope?: unknown }).clusterScope !== true &&
      mayMaterialize(op, children)
    ) {
      const wft = await this.#readOptional<unknown>(
        resourcePath(
          { group: 'argoproj.io', version: 'v1alpha1', plural: 'workflowtemplates', namespace: ns },
          (wfRef as { name: string }).name,
        ),
        signal,
      );
      if (wft) env.workflowTemplateServiceAccounts = workflowTemplateServiceAccounts(wft);
    }
    // A helm Upgrade's release record as it is now: where its rollback goes, and whether a stopped runner
    // left the release pending (helm-rollback.ts).
    if (op.spec.engine === 'helm' && op.spec.type === 'Upgrade' && release.namespace === ns) {
      const state = await readReleaseState(this.#client, ns, release.name, signal);
      if (state) env.helmRelease = state;
      const jobs = await readHookJobs(this.#client, ns, release.name, signal);
      if (jobs) env.helmHookJobs = jobs;
      // A Safe Upgrade: the claims to snapshot before it, and once helm has finished (a restore may follow)
      // what an in-place restore acts on (helm-safe.ts).
      if (mayMaterialize(op, children) && this.#safetyOf(op)?.backup) {
        // A template with another profile than safeUpgrade.helm is refused by the adapter, not with a 403 here.
        const pvcs = await this.#releasePvcs(ns, release.name, signal).catch((err: unknown) => {
          if (statusCode(err) === 403) return undefined;
          throw err;
        });
        if (pvcs) env.pvcs = pvcs;
      }
      if (isSafeUpgrade(children) && children.some((c) => c.kind === 'VolumeSnapshot')) {
        const runner = children.find((c) => c.kind === 'Job' && jobFinished(c));
        if (runner) {
          const facts = await readRestoreFacts(
            this.#client,
            ns,
            { release: release.name, withSnapshots: false },
            signal,
          );
          if (facts) env.restore = facts;
        }
      }
    }
    if (backup) env.veleroBackup = backup;
    return env;
  }

  /**
   * A velero Restore's Backup: the one parameters.backupName names (resolved only for this engine: it scans
   * the namespace's Operations), else for spec.source the newest Completed Backup of the instance made for
   * the source namespace (a Verify: its own), listed in Velero's namespace (restore-source.ts).
   */
  async restoreBackup(op: Operation, signal: AbortSignal): Promise<RestoreBackup | undefined> {
    const backups = { group: 'velero.io', version: 'v1', plural: 'backups', namespace: this.veleroNamespace };
    const backupName = this.#parametersOf(op).backupName;
    if (typeof backupName === 'string') {
      const backup = await this.#readOptional<KubernetesObject>(resourcePath(backups, backupName), signal);
      return backup && asRestoreBackup(backup);
    }
    // A Verify drills the newest backup of the instance made for its own namespace (ADR 0054).
    if (!op.spec.source && op.spec.type !== 'Verify') return undefined;
    const source = sourceNamespace(op);
    const list = await this.#client.request<{ items?: KubernetesObject[] }>({
      method: 'GET',
      path: resourcePath(backups),
      query: {
        labelSelector: `${LABEL_OPERATION_NAMESPACE}=${source},${LABEL_INSTANCE}=${op.spec.targetRef.name}`,
      },
      signal,
    });
    return newestBackup(list.items ?? [], source, op.spec.targetRef.name);
  }

  /** The names of the release's PersistentVolumeClaims (label app.kubernetes.io/instance), sorted. */
  async #releasePvcs(ns: string, release: string, signal: AbortSignal): Promise<string[]> {
    const claims = await this.#releaseClaims(ns, release, signal);
    return claims.map((p) => p.metadata?.name ?? '').sort();
  }

  /** The release's PersistentVolumeClaims (label app.kubernetes.io/instance). */
  async #releaseClaims(ns: string, release: string, signal: AbortSignal): Promise<KubernetesObject[]> {
    const list = await this.#client.request<{ items?: KubernetesObject[] }>({
      method: 'GET',
      path: resourcePath({ group: '', version: 'v1', plural: 'persistentvolumeclaims', namespace: ns }),
      query: { labelSelector: `${LABEL_HELM_INSTANCE}=${release}` },
      signal,
    });
    return list.items ?? [];
  }

  /**
   * An object the environment needs, or undefined when it does not exist or the operator may not read
   * it: a missing profile rule is reported by RbacProfilePresent before anything is materialized.
   */
  async #readOptional<T>(path: string, signal: AbortSignal): Promise<T | undefined> {
    try {
      return await this.#client.request<T>({ method: 'GET', path, signal });
    } catch (err) {
      if (isNotFound(err) || statusCode(err) === 403) return undefined;
      throw err;
    }
  }
}
