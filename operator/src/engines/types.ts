// The one interface every engine adapter implements (DESIGN.md §4). Adapters are PURE: they turn
// (Operation, target, template, environment facts) into child manifests and a child's observed
// state into the Operation's phase/reason/outputs. All I/O — creating, reading, deleting children —
// belongs to the Operation reconciler, which treats every engine alike through this interface.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ApplicationInstance } from '../api/applicationinstance.ts';
import type { Engine, OperationType } from '../api/enums.ts';
import type { Operation, RollbackRecord } from '../api/operation.ts';
import type { EffectiveTemplate } from '../catalog/template.ts';
import type { ReleaseHook } from '../release/helm-release.ts';

/** A child object exactly as it will be created (apiVersion, kind, metadata.name/namespace set). */
export type ChildManifest = KubernetesObject & {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [key: string]: unknown;
};

/** Facts from the cluster an adapter may need, gathered by the reconciler before materialize. */
export interface EngineEnvironment {
  /** Namespace where Velero runs and its Backup/Restore objects live (default "velero"). */
  veleroNamespace: string;
  /** The helm CLI image for the helm engine's runner Job (RELATED_IMAGE_HELM), by digest. */
  helmImage?: string;
  /** PVC names of the target's Helm release (label app.kubernetes.io/instance=<release>), sorted. */
  pvcs?: readonly string[];
  /**
   * helmHookJob with parameters.configMapName: the text that ConfigMap holds under key job.yaml, as
   * written (the adapter parses it as untrusted YAML).
   */
  migrationJobYaml?: string;
  /**
   * helmHookJob without parameters.configMapName: the hooks of the newest release record of the
   * target's release, read (by name, only that Secret) when a child may be materialized.
   */
  releaseHooks?: ReleaseHooks;
  /**
   * workflow: every ServiceAccount the namespaced WorkflowTemplate the Operation runs names (its spec's,
   * its executor's, each template's), read when a child may be made; absent when it was not read.
   */
  workflowTemplateServiceAccounts?: readonly string[];
  /**
   * Restore: the velero.io Backup parameters.backupName names, else (spec.source) the newest Completed one
   * of the instance made for the source namespace, as read from the Velero namespace; absent when none.
   */
  veleroBackup?: {
    name: string;
    labels: Record<string, string>;
    annotations?: Record<string, string>;
    /** Its status.phase and status.completionTimestamp (a Verify checks and measures them). */
    phase?: string;
    completedAt?: string;
  };
  /**
   * helm Upgrade: the target's release as Helm's record says now (the labels of its release Secrets, read
   * as metadata only on every reconcile of a running Upgrade); undefined when it has no record.
   */
  helmRelease?: HelmReleaseState;
  /**
   * helm Upgrade: the Jobs of the target's namespace labelled app.kubernetes.io/instance=<release>, read
   * on every reconcile of a running Upgrade: the chart's hook Jobs an abandoned upgrade left running are
   * among them (helm-hook-stop.ts).
   */
  helmHookJobs?: readonly KubernetesObject[];
  /**
   * volsync Verify: the Succeeded volsync Backup Operations of the target in its namespace, newest first
   * (volsync-verify.ts), read from the Operation cache when a child may be made.
   */
  volsyncBackups?: readonly VolsyncBackupRecord[];
  /** volsync Verify: the release's PersistentVolumeClaims themselves (each restored copy is sized by one). */
  releaseClaims?: readonly KubernetesObject[];
  /** snapshot Restore: the claims, workloads, pods (and, before the plan, snapshots) it acts on. */
  restore?: RestoreFacts;
  /**
   * The operator's own ServiceAccount. Runner pods (job, helm, helmHookJob) running as exactly this
   * account get automountServiceAccountToken: false, so the operator's token never reaches a runner.
   */
  operatorServiceAccount?: { namespace: string; name: string };
}

/**
 * snapshot Restore: the cluster as it is now, read on every reconcile until it ends. Objects as the API
 * server returns them; the release's claims and workloads are those labelled app.kubernetes.io/instance.
 */
export interface RestoreFacts {
  pvcs: readonly KubernetesObject[];
  /** The release's Deployments and StatefulSets (kind set). */
  workloads: readonly KubernetesObject[];
  /** Every pod of the namespace: any of them may mount a claim to restore. */
  pods: readonly KubernetesObject[];
  /** The VolumeSnapshots to choose from (read only before the plan exists). */
  snapshots?: readonly KubernetesObject[];
}

/** A Succeeded volsync Backup Operation of the instance, as a drill reads it (volsync-verify.ts). */
export interface VolsyncBackupRecord {
  /** The Backup Operation's name: the backup a drill verifies. */
  operation: string;
  /** When it finished (RFC 3339): the restore point (restoreAsOf) and where the RPO starts. */
  completedAt: string;
  /** Its spec.parameters.repository: the repository Secret(s) it wrote to. */
  repository: unknown;
}

/** A release as the labels of its Helm release Secrets describe it (owner=helm, name, version, status). */
export interface HelmReleaseState {
  /** The newest revision and its status (deployed, failed, pending-upgrade, pending-rollback, …). */
  revision: number;
  status: string;
  /** The newest revision that was deployed (status deployed or superseded): where a rollback goes. */
  lastDeployed?: number;
}

/** What the reconciler read of a release record for the helmHookJob engine. */
export interface ReleaseHooks {
  /** The newest revision; undefined when the release has no record. */
  revision?: number;
  /** Its hooks, in the order Helm stored them (manifests rendered with the release's values). */
  hooks: readonly ReleaseHook[];
  /** Why the record could not be read (names the Secret, never its content). */
  problem?: string;
}

export interface MaterializeInput {
  op: Operation;
  target: ApplicationInstance;
  template: EffectiveTemplate;
  /** spec.parameters after the template's defaults were applied and validated. */
  parameters: Record<string, unknown>;
  env: EngineEnvironment;
  /** 1 for the first child, 2.. for retries (policy.retryLimit): part of the deterministic name. */
  attempt: number;
}

export type MaterializeResult =
  | {
      ok: true;
      children: ChildManifest[];
      /**
       * What a dry run shows in status.plan instead of `children`, when they hold values read from a
       * Secret (redact.ts); unset: the children themselves.
       */
      plan?: ChildManifest[];
      /**
       * What the reconciler does first, before it creates the children (idempotent: a crash in between
       * repeats it), e.g. label the instance so a velero Backup's selector finds it. Not done for a dry run.
       */
      prepare?: ChildAction[];
    }
  /** Permanent problem with the request (reported as Accepted=False/InvalidParameters or the given reason). */
  | { ok: false; reason: string; message: string };

export type ObservedPhase = 'Running' | 'Succeeded' | 'Failed';

export interface Observation {
  phase: ObservedPhase;
  /** Engine reason, verbatim from DESIGN.md's table (e.g. VeleroBackupInProgress, JobFailed). */
  reason: string;
  /** Human message saying what happened and, on failure, what to do. Never contains secret data. */
  message: string;
  /** e.g. { backupName } — lands in status.outputs. */
  outputs?: Record<string, string>;
  /** true when a failure may succeed on retry (policy.retryLimit applies); false = permanent. */
  retryable?: boolean;
  /**
   * Running only: what the reconciler does to the children now, e.g. resume the next suspended Job of a
   * sequence (helmHookJob). Performed like cancel actions; must be idempotent (the next observe of a
   * stale cache asks again).
   */
  actions?: ChildAction[];
  /**
   * Set by adapters whose stop puts things back (helm: the rollback): what the stop ended with, added to
   * the Cancelled or DeadlineExceeded message so it says what happened to the application.
   */
  stopped?: string;
  /**
   * Running only: look again after this long. For engines whose progress shows on objects that are not
   * their children (a snapshot Restore waits for pods to stop and claims to bind), so no watch event comes.
   */
  recheckAfterMs?: number;
  /** A Safe Upgrade putting the release back: what it did so far (status.rollback, ADR 0055). */
  rollback?: RollbackRecord;
}

/** What to do to a child: stop it gracefully (cancel), or move a sequence on (Observation.actions). */
export type CancelAction =
  // A merge patch, e.g. Argo spec.shutdown; of `subresource` (scale) when set.
  | { kind: 'patch'; child: ChildManifest; patch: Record<string, unknown>; subresource?: 'scale' }
  // `uid`: only that object (a delete precondition), never one made since under the same name.
  | { kind: 'delete'; child: ChildManifest; propagationPolicy?: 'Foreground' | 'Background'; uid?: string }
  | { kind: 'create'; object: ChildManifest } // e.g. a velero DeleteBackupRequest (server-side apply)
  // Created (POST) if nothing of that name exists; an existing object is left exactly as it is.
  | { kind: 'ensure'; object: ChildManifest }
  // A further child of the current attempt, made only now (a Safe Upgrade's restore plan, once it is needed):
  // created like the first ones (POST, or adopted with the same proof) and recorded in status.childRefs.
  | { kind: 'adopt'; object: ChildManifest }
  | { kind: 'none' }
  // Nothing the engine allows yet (a velero Backup in flight cannot be deleted): the Operation keeps
  // cancelling, says `message`, and asks again when the child changes. `settling`: the engine is putting
  // the application back (helm rolling a release back), so not even the deadline ends the Operation
  // before the wait is over (a wait without it ends at the deadline, saying the child may still finish).
  // `recheckAfterMs`: look again after this long (what it waits for is not a child, so no event comes).
  | { kind: 'wait'; message: string; settling?: boolean; recheckAfterMs?: number };
export type ChildAction = CancelAction;

/**
 * How a finished Job's container ended, read by the reconciler from the Job's pod (adapters that set
 * `podOutcomeContainer`): the container's terminated state and the tail of its log.
 */
export interface PodOutcome {
  pod: string;
  container: string;
  exitCode?: number;
  /** The terminated state's reason: Completed, Error, OOMKilled, ... */
  reason?: string;
  /** The last lines of the container's log, already bounded and cleaned (runner-pod.ts logTail). */
  logTail?: string;
}

export interface ObserveInput extends Pick<MaterializeInput, 'op' | 'attempt'> {
  /** Outcomes of the finished child Job's pods (only for adapters with `podOutcomeContainer`). */
  pods?: readonly PodOutcome[];
  /** The facts the reconciler gathered this time (e.g. helmRelease); absent for a finished Operation. */
  env?: EngineEnvironment;
}

export interface EngineAdapter {
  engine: Engine;
  /** Operation types this adapter runs. */
  types: readonly OperationType[];
  /** Which children exist for the Operation: the (apiVersion, kind) pairs the reconciler must watch. */
  childKinds: readonly { apiVersion: string; kind: string; plural: string }[];
  /** Pure and deterministic: same input ⇒ same manifests, names `<op-name>-<short-hash>`. */
  materialize(input: MaterializeInput): MaterializeResult;
  /**
   * Pure: the current children (as read from the API server) ⇒ the Operation's state. Children not
   * visible yet (an empty list right after creation) read as Running; noticing that a child
   * disappeared for good is the reconciler's job.
   */
  observe(children: readonly KubernetesObject[], input: ObserveInput): Observation;
  /** Pure: how to stop these children gracefully (cancel, deadline). */
  cancel(children: readonly KubernetesObject[], input?: ObserveInput): CancelAction[];
  /**
   * The container whose exit code and log tail the reconciler reads from the pod of the child Job that
   * decided the outcome (runner-pod.ts decisiveJob; pods and pods/log in the engine's RBAC profile) and
   * passes to observe as `pods`. ANY_CONTAINER ('*'): the one that exited non-zero, else the first.
   */
  podOutcomeContainer?: string;
  /**
   * Pure: what must go once the Operation has ended or is being deleted, whatever the outcome (a Verify's
   * scratch namespace), and the patch that takes the Operation's finalizer off once nothing is left.
   * `pending`: something is still going away (look again later; no event says when it is gone).
   */
  cleanup?(
    children: readonly KubernetesObject[],
    op: Operation,
  ): { actions: CancelAction[]; pending: boolean };
}
