// The crash-safety run's plan, a pure function of the seed: which 50 Operations exist, in which order
// they are created, when each operator process is killed. Replaying a seed (CRASH_SEED) replays the
// plan; the interleaving with the operator is of course still the machine's.
import type { Engine, OperationType } from '../../../operator/src/api/enums.ts';
import type { OperationSpec } from '../../../operator/src/api/operation.ts';
import { ANNOTATION_OUTCOME, HOLD } from '../../support/simulator.ts';

/** mulberry32: small, fast, good enough to pick delays and shuffle a list. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function shuffle<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The two target namespaces of the run (real names are given by the fixture). */
export type Side = 'a' | 'b';

/**
 * How an Operation is expected to end:
 * - `runs`: preconditions pass, one child per attempt (per PVC for volsync/snapshot), terminal by itself;
 * - `never`: preconditions never pass, so it never gets a child; `finalPhases` are the acceptable ends
 *   (Blocked/Pending ones are cancelled by the test once everything else is terminal);
 * - `cancelMidway`: runs, is cancelled by the test while its child is held in progress.
 */
export type Expectation =
  | { kind: 'runs'; attempts: number; phases: readonly string[] }
  | { kind: 'never'; finalPhases: readonly string[]; why: string }
  | { kind: 'cancelMidway' };

export interface PlannedOperation {
  name: string;
  side: Side;
  spec: Pick<OperationSpec, 'type' | 'engine' | 'targetRef'> & Partial<OperationSpec>;
  annotations?: Record<string, string>;
  expect: Expectation;
}

/** The capable instances per namespace (each a Helm release of the tiny chart) and their PVC counts. */
export const INSTANCES: Record<Side, Record<string, number>> = {
  a: { alpha: 2, beta: 1 },
  b: { gamma: 2, delta: 1 },
};
/** An instance in namespace a without capability annotations. */
export const BARE = 'bare';
export const GHOST = 'ghost';
export const WORKFLOW_TEMPLATE = 'hello';
export const REPO_SECRET = 'restic-repo';
/**
 * The volsync `repository` of a release with `pvcs` claims: each claim needs a restic repository of its
 * own (VolSync's mover tells a shared repository's snapshots apart only by time), so with several claims a
 * map: `<release>-data` → REPO_SECRET, `<release>-extra-<i>` → `REPO_SECRET-<i>` (the fixture makes both).
 */
export function resticRepository(release: string, pvcs: number): string | Record<string, string> {
  if (pvcs <= 1) return REPO_SECRET;
  const extra = Array.from({ length: pvcs - 1 }, (_, k) => [
    `${release}-extra-${k + 1}`,
    `${REPO_SECRET}-${k + 1}`,
  ]);
  return Object.fromEntries([[`${release}-data`, REPO_SECRET], ...extra]);
}
export const CAPABILITIES = {
  backup: 'velero',
  snapshot: 'snapshot',
  replicate: 'volsync',
  runcommand: 'job',
  runbook: 'workflow',
  upgrade: 'helm',
} as const;

const ok = (phases: readonly string[] = ['Succeeded'], attempts = 1): Expectation => ({
  kind: 'runs',
  attempts,
  phases,
});
const never = (why: string, finalPhases: readonly string[]): Expectation => ({
  kind: 'never',
  why,
  finalPhases,
});

type Kind = { type: OperationType; engine: Engine; parameters?: Record<string, unknown> };
const VELERO: Kind = { type: 'Backup', engine: 'velero' };
const SNAPSHOT: Kind = { type: 'Backup', engine: 'snapshot' };
const VOLSYNC: Kind = { type: 'Backup', engine: 'volsync', parameters: { repository: REPO_SECRET } };
const JOB: Kind = { type: 'RunCommand', engine: 'job', parameters: { command: ['sh', '-c', 'echo hi'] } };
const RUNBOOK: Kind = {
  type: 'Runbook',
  engine: 'workflow',
  parameters: { workflowTemplateRef: { name: WORKFLOW_TEMPLATE }, arguments: { who: 'crash' } },
};
const UPGRADE: Kind = { type: 'Upgrade', engine: 'helm', parameters: { version: '1.0.1' } };

/** Kinds that run, with how many of each; spread round-robin over the four capable instances. */
const RUNNING_MIX: readonly [string, Kind, number, Expectation?, Record<string, string>?][] = [
  ['vb', VELERO, 8],
  // Velero fails both attempts: attempt 2 after the backoff, then RetryLimitExceeded.
  ['vf', VELERO, 2, ok(['Failed'], 2), { [ANNOTATION_OUTCOME]: 'Failed' }],
  ['sn', SNAPSHOT, 6],
  ['vs', VOLSYNC, 5],
  ['rc', JOB, 8],
  ['rb', RUNBOOK, 6],
  // Argo reports a failed node: retryLimit 0 ends with the engine's reason.
  ['rf', RUNBOOK, 1, ok(['Failed']), { [ANNOTATION_OUTCOME]: 'Failed' }],
  // Upgrade conflicts with everything on its target and waits for Ready (toggled during the run).
  ['up', UPGRADE, 5],
];

export const HELD = 'held';

/** The 50 Operations, in creation order (the held one, then the others shuffled by the seed). */
export function planOperations(random: () => number): PlannedOperation[] {
  const targets: [Side, string][] = [];
  for (const side of ['a', 'b'] as const)
    for (const name of Object.keys(INSTANCES[side])) targets.push([side, name]);
  const ops: PlannedOperation[] = [];
  let t = 0;
  for (const [prefix, kind, count, expect, annotations] of RUNNING_MIX) {
    for (let i = 0; i < count; i++) {
      const [side, target] = targets[t++ % targets.length]!;
      ops.push({
        name: `${prefix}-${i}`,
        side,
        spec: {
          type: kind.type,
          engine: kind.engine,
          targetRef: { name: target },
          ...(kind.engine === 'volsync'
            ? { parameters: { repository: resticRepository(target, INSTANCES[side][target] ?? 1) } }
            : params(kind)),
        },
        ...(annotations ? { annotations } : {}),
        expect: expect ?? ok(),
      });
    }
  }
  // Runs until the test cancels it: cancel is carried out across crashes (Argo: spec.shutdown). First,
  // so it is running by the time the test cancels it.
  const held: PlannedOperation = {
    name: HELD,
    side: 'a',
    spec: { ...RUNBOOK, targetRef: { name: 'alpha' }, ...params(RUNBOOK) },
    annotations: { [ANNOTATION_OUTCOME]: HOLD },
    expect: { kind: 'cancelMidway' },
  };
  const waitsForever = ['Blocked', 'Pending', 'Cancelled'];
  const never_: PlannedOperation[] = [
    {
      name: 'nocap-0',
      side: 'a',
      spec: { ...JOB, targetRef: { name: BARE } },
      expect: never('CapabilityMissing', ['Failed']),
    },
    {
      name: 'nocap-1',
      side: 'a',
      spec: { ...VELERO, targetRef: { name: BARE } },
      expect: never('CapabilityMissing', ['Failed']),
    },
    {
      name: 'badimage',
      side: 'b',
      spec: {
        ...JOB,
        targetRef: { name: 'gamma' },
        parameters: { image: 'evil.example/miner:1', command: ['x'] },
      },
      expect: never('InvalidParameters', ['Failed']),
    },
    {
      name: 'nosecret-0',
      side: 'a',
      spec: { ...VOLSYNC, targetRef: { name: 'alpha' }, parameters: { repository: 'absent-repo' } },
      expect: never('MissingSecret', waitsForever),
    },
    {
      name: 'nosecret-1',
      side: 'b',
      spec: { ...VOLSYNC, targetRef: { name: 'gamma' }, parameters: { repository: 'absent-repo' } },
      expect: never('MissingSecret', waitsForever),
    },
    {
      name: 'nosa',
      side: 'b',
      spec: {
        ...JOB,
        targetRef: { name: 'delta' },
        parameters: { command: ['true'], serviceAccountName: 'absent-runner' },
      },
      expect: never('MissingServiceAccount', waitsForever),
    },
    {
      name: 'unapproved',
      side: 'a',
      spec: { ...VELERO, targetRef: { name: 'beta' }, policy: { requiresApproval: true } },
      expect: never('AwaitingApproval', waitsForever),
    },
    {
      // Pending for the 5-minute grace period, then Failed/TargetNotFound: either way no child.
      name: 'noinstance',
      side: 'b',
      spec: { ...VELERO, targetRef: { name: GHOST } },
      expect: never('TargetNotFound', ['Pending', 'Failed', 'Cancelled']),
    },
  ];
  return [held, ...shuffle([...ops, ...never_], random)];
}

function params(kind: Kind): Partial<OperationSpec> {
  return kind.parameters ? { parameters: kind.parameters } : {};
}

export interface CrashSchedule {
  /** Operations created before the first operator process starts. */
  initial: PlannedOperation[];
  /** Per kill cycle: the Operations created once that process leads, and when it is killed (ms after). */
  cycles: { create: PlannedOperation[]; killAfterMs: number }[];
  /** From this cycle on, the held Operation is cancelled as soon as it runs. */
  cancelHeldAtCycle: number;
  /**
   * Cycles at which the TOGGLED instances' releases break (a failed helm upgrade: Ready=False, so
   * Upgrades there wait while Backups run) or are fixed again: the conflict queue then changes under
   * the crashes. The last one is always a fix.
   */
  readiness: Map<number, 'break' | 'fix'>;
}

/** Instances whose release is broken and fixed during the run. */
export const TOGGLED: readonly [Side, string][] = [
  ['a', 'alpha'],
  ['b', 'gamma'],
];

/**
 * Spreads the Operations over the kill cycles so that every leader meets fresh work: the kill lands
 * while it materializes children, writes status and follows the queue. `killWindowMs` bounds the time
 * a process leads before it is killed.
 */
export function planSchedule(
  ops: readonly PlannedOperation[],
  kills: number,
  random: () => number,
  killWindowMs: readonly [number, number],
): CrashSchedule {
  const initialCount = Math.max(0, ops.length - 2 * kills);
  const initial = ops.slice(0, initialCount);
  const rest = ops.slice(initialCount);
  const cycles: CrashSchedule['cycles'] = [];
  for (let i = 0; i < kills; i++) {
    const [lo, hi] = killWindowMs;
    cycles.push({
      create: rest.filter((_, j) => j % kills === i),
      killAfterMs: Math.round(lo + random() * (hi - lo)),
    });
  }
  const readiness = new Map<number, 'break' | 'fix'>();
  for (let c = 1; c + 2 < kills; c += 5) {
    readiness.set(c, 'break');
    readiness.set(c + 2, 'fix');
  }
  return { initial, cycles, cancelHeldAtCycle: Math.floor(kills / 2), readiness };
}
