// Crash safety (issue 4): the operator runs as a separate process with leader election, is killed with
// SIGKILL at random moments while it reconciles 50 Operations of mixed engines, and is started again
// each time. Afterwards every Operation is terminal, each has exactly one child per attempt (one per
// PVC for per-PVC engines), no child ever existed for an Operation whose preconditions never passed,
// and Operations that conflict on a target never ran at the same time.
//
// Its own kwok cluster (real controller-manager + scheduler, kwok as kubelet) so runner Jobs complete;
// the engine simulator (test process) moves Velero, Argo, VolSync and VolumeSnapshot children.
// The operator runs with the cluster's admin kubeconfig, so every RbacProfilePresent access review
// passes: least privilege is tested elsewhere (test/integration/operation/rbac-velero.test.ts), this
// test is about crashes.
//
// After a SIGKILL the Lease is not released: each new process waits out the lease (LEASE_DURATION=6s) before it
// leads, as a real replacement Pod does; the test waits for leader_election_master_status 1 and kills
// at a random moment within KILL_WINDOW_MS after creating the cycle's Operations, so every kill lands
// while the process is reconciling. The replacement starts as a standby as soon as the leader leads,
// like a second replica. Every five cycles two releases are broken (a failed helm upgrade:
// Ready=False) and two cycles later fixed, so Upgrades waiting for Ready and Backups competing for the
// same target reshuffle the conflict queue under the crashes.
//
// Seeded: CRASH_SEED=<n> replays the plan (the seed is printed); CRASH_KILLS sets the number of kills
// (14 by default, to keep a warm make test under 20 minutes; the seed varies per run, and
// CRASH_KILLS=50 is a longer soak). A failed run prints the suspect Operations' status and the last operator log lines
// and keeps every process's log (in bin/test-results/kept/, printed); VWS_KEEP_CLUSTER=1 keeps them always.
import { randomInt } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultCrdFiles } from '../../../hack/lib/controlplane.ts';
import { type KwokCluster, startKwokCluster } from '../../../hack/lib/kwok-cluster.ts';
import { OPERATION } from '../../../operator/src/api/constants.ts';
import { TERMINAL_PHASES } from '../../../operator/src/api/enums.ts';
import type { Operation } from '../../../operator/src/api/operation.ts';
import { typesConflict } from '../../../operator/src/operation/conflicts.ts';
import { helm, TINY_CHART } from '../../support/helm.ts';
import { keepInTestResults } from '../../support/kept.ts';
import { OperatorProcess, tail } from '../../support/operator-process.ts';
import { EngineSimulator } from '../../support/simulator.ts';
import { eventually } from '../operation/support.ts';
import { ChildRecorder, type SeenChild } from './child-recorder.ts';
import {
  buildWorld,
  connect,
  NAMESPACES,
  OPERATOR_NAMESPACE,
  VELERO_NAMESPACE,
  type World,
} from './fixture.ts';
import {
  HELD,
  INSTANCES,
  type PlannedOperation,
  planOperations,
  planSchedule,
  prng,
  TOGGLED,
} from './plan.ts';

const SEED = process.env.CRASH_SEED ? Number(process.env.CRASH_SEED) : randomInt(2 ** 31);
const KILLS = process.env.CRASH_KILLS ? Number(process.env.CRASH_KILLS) : 14;
const KILL_WINDOW_MS: [number, number] = [300, 4000];
/** Kinds each engine's children have. */
const CHILD_KIND: Record<string, string> = {
  velero: 'Backup',
  snapshot: 'VolumeSnapshot',
  volsync: 'ReplicationSource',
  job: 'Job',
  helm: 'Job',
  workflow: 'Workflow',
};
const PER_PVC = new Set(['snapshot', 'volsync']);

const isTerminal = (op: Operation | undefined) =>
  op?.status?.phase !== undefined && TERMINAL_PHASES.includes(op.status.phase);
const key = (p: PlannedOperation) => `${NAMESPACES[p.side]}/${p.name}`;

describe('crash safety: SIGKILLed operator process, 50 Operations of mixed engines', () => {
  let cluster: KwokCluster | undefined;
  let world: World;
  let recorder: ChildRecorder | undefined;
  let simulator: EngineSimulator | undefined;
  let logDir: string;
  const procs: OperatorProcess[] = [];
  let passed = false;

  beforeAll(async () => {
    console.log(`crash-safety: seed ${SEED} (replay with CRASH_SEED=${SEED}), ${KILLS} kills`);
    logDir = await mkdtemp(join(tmpdir(), 'vws-crash-'));
    cluster = await startKwokCluster({ crdFiles: defaultCrdFiles() });
    world = connect(cluster.kubeconfigPath);
    await buildWorld(world, cluster.kubeconfigPath);
    recorder = new ChildRecorder(world.kc);
    await recorder.start();
    simulator = new EngineSimulator(world.client, {
      namespaces: [...Object.values(NAMESPACES), VELERO_NAMESPACE],
      intervalMs: 250,
    });
    simulator.start();
  }, 600_000);

  afterAll(async () => {
    for (const p of procs) await p.kill().catch(() => undefined);
    await simulator?.stop();
    await recorder?.stop();
    await cluster?.stop();
    if (!logDir) return;
    if (passed && process.env.VWS_KEEP_CLUSTER !== '1') await rm(logDir, { recursive: true, force: true });
    else if (process.env.VWS_KEEP_CLUSTER === '1')
      console.log(`crash-safety: operator logs kept in ${logDir}`);
    else console.log(`crash-safety: operator logs kept in ${await keepInTestResults(logDir)}`);
  }, 120_000);

  it(
    'every Operation ends, with exactly one child per attempt and none where preconditions never passed',
    async () => {
      const started = Date.now();
      const settings = {
        kubeconfigPath: cluster!.kubeconfigPath,
        namespace: OPERATOR_NAMESPACE,
        logDir,
        helmImage: 'docker.io/alpine/helm:3.19.0',
        // A killed leader's lease runs out after 6 s instead of 15 s: 14 kills wait 2 minutes less.
        // No webhooks here (processes are killed; admission is not what this test is about): the admin's
        // Operations carry no signed admission record, so the development switch runs them anyway.
        env: {
          LEASE_DURATION: '6s',
          RENEW_DEADLINE: '4s',
          RETRY_PERIOD: '1s',
          REQUIRE_ADMISSION_STAMP: 'false',
        },
      };
      const random = prng(SEED);
      const plan = planOperations(random);
      const schedule = planSchedule(plan, KILLS, random, KILL_WINDOW_MS);
      const api = world.api;
      const byKey = new Map(plan.map((p) => [key(p), p]));
      const get = (p: PlannedOperation) => api.getOperation(NAMESPACES[p.side], p.name);
      const createAll = async (ops: readonly PlannedOperation[]) => {
        for (const p of ops) {
          await api.client.request({
            method: 'POST',
            path: api.opPath(NAMESPACES[p.side]),
            body: {
              apiVersion: OPERATION.apiVersion,
              kind: OPERATION.kind,
              metadata: { name: p.name, ...(p.annotations ? { annotations: p.annotations } : {}) },
              spec: p.spec,
            },
          });
        }
      };
      const held = plan.find((p) => p.name === HELD)!;
      let heldCancelled = false;
      const cancelHeldIfRunning = async () => {
        const op = await get(held);
        if (op.status?.phase !== 'Running') return false;
        await api.patchOperation(NAMESPACES[held.side], held.name, { spec: { cancel: true } });
        return true;
      };
      const lastLogs = (lines: number) =>
        procs
          .slice(-2)
          .map((p) => `--- ${p.logPath} ---\n${tail(p.logPath, lines)}`)
          .join('\n');
      const dump = async (keys: Iterable<string>) => {
        const lines: string[] = [];
        for (const k of keys) {
          const p = byKey.get(k);
          if (!p) continue;
          const op = await get(p).catch(() => undefined);
          lines.push(`${k}: ${JSON.stringify(op?.status ?? null)}`);
        }
        return `${lines.join('\n')}\n${lastLogs(60)}`;
      };

      let kills = 0;
      try {
        await createAll(schedule.initial);
        let leader = await OperatorProcess.start(settings, 'process 1');
        procs.push(leader);
        for (const [i, cycle] of schedule.cycles.entries()) {
          await leader.waitLeader(120_000);
          // The replacement starts as a standby (a Deployment's second replica): it watches the Lease
          // and takes over once the killed leader's lease has run out.
          const next = await OperatorProcess.start(
            settings,
            i + 1 < schedule.cycles.length ? `process ${i + 2}` : 'final process',
          );
          procs.push(next);
          await createAll(cycle.create);
          const readiness = schedule.readiness.get(i);
          if (readiness) await toggleReleases(cluster!.kubeconfigPath, readiness);
          if (i >= schedule.cancelHeldAtCycle && !heldCancelled) heldCancelled = await cancelHeldIfRunning();
          await sleep(cycle.killAfterMs);
          if (leader.crashed) throw new Error(`operator process ${i + 1} exited on its own`);
          await leader.kill();
          kills++;
          leader = next;
        }
        const last = leader;
        await last.waitLeader(120_000);
        if (!heldCancelled) {
          await eventually('held Operation running', cancelHeldIfRunning, 300_000, 1000);
          heldCancelled = true;
        }
        // Everything that can finish by itself does; the others wait for something that never comes.
        const waiters = plan.filter(
          (p) =>
            p.expect.kind === 'never' &&
            p.expect.finalPhases.some((ph) => !TERMINAL_PHASES.includes(ph as never)),
        );
        const settled = async () => {
          const pending: string[] = [];
          for (const p of plan) {
            const op = await get(p);
            if (isTerminal(op)) continue;
            if (waiters.includes(p) && op.status?.phase && ['Blocked', 'Pending'].includes(op.status.phase))
              continue;
            pending.push(key(p));
          }
          return pending;
        };
        try {
          await eventually(
            'every Operation settled',
            async () => (await settled()).length === 0,
            600_000,
            1000,
          );
        } catch (err) {
          throw new Error(`${String(err)}\n${await dump(await settled())}`);
        }
        // Why each waiter waits. "Settled" above only says every waiter is Blocked or Pending: one that
        // was queued behind a conflicting Operation is re-evaluated when that one ends, asynchronously, so
        // its reason converges a moment later. Wait for it (a reason that never converges still fails).
        const wrongReasons = async () => {
          const out: string[] = [];
          for (const p of waiters) {
            const op = await get(p);
            if (isTerminal(op) || p.expect.kind !== 'never') continue;
            const waiting =
              op.status?.conditions?.find((c) => c.type === 'Blocked' && c.status === 'True')?.reason ??
              op.status?.conditions?.find((c) => c.type === 'Accepted' && c.status === 'False')?.reason;
            if (waiting !== p.expect.why)
              out.push(`${key(p)} waits for ${waiting}, expected ${p.expect.why}`);
          }
          return out;
        };
        let reasons: string[] = [];
        await eventually(
          'every waiter waits for its own reason',
          async () => {
            reasons = await wrongReasons();
            return reasons.length === 0;
          },
          60_000,
          1000,
        ).catch(() => undefined);
        expect(reasons).toEqual([]);
        // Then cancel them: a not-started Operation ends Cancelled at once.
        for (const p of waiters) {
          const op = await get(p);
          if (isTerminal(op)) continue;
          await api.patchOperation(NAMESPACES[p.side], p.name, { spec: { cancel: true } });
        }
        const notTerminal = async () => {
          const out: string[] = [];
          for (const p of plan) if (!isTerminal(await get(p))) out.push(key(p));
          return out;
        };
        try {
          await eventually(
            'every Operation terminal',
            async () => (await notTerminal()).length === 0,
            120_000,
            1000,
          );
        } catch (err) {
          throw new Error(`${String(err)}\n${await dump(await notTerminal())}`);
        }
        await last.stop();
        if (last.crashed) throw new Error('the final operator process exited on its own');
      } catch (err) {
        console.log(`crash-safety failed after ${kills} kills (seed ${SEED}):\n${lastLogs(80)}`);
        throw err;
      }

      // ---- the verdict ----
      const final = new Map<string, Operation>();
      for (const p of plan) final.set(key(p), await get(p));
      const children = recorder!.byOperation();
      const problems: string[] = [];
      const suspects = new Set<string>();
      const problem = (k: string, what: string) => {
        problems.push(`${k}: ${what}`);
        suspects.add(k);
      };

      for (const p of plan) {
        const k = key(p);
        const op = final.get(k)!;
        const phase = op.status?.phase ?? '(none)';
        const mine = children.get(k) ?? [];
        if (!isTerminal(op)) problem(k, `not terminal: ${phase}`);
        if (p.expect.kind === 'never') {
          if (!p.expect.finalPhases.includes(phase))
            problem(k, `phase ${phase}, expected ${p.expect.finalPhases}`);
          if (mine.length > 0)
            problem(k, `preconditions never passed (${p.expect.why}) but children exist: ${names(mine)}`);
          if (op.status?.attempts) problem(k, `attempts ${op.status.attempts} without passing preconditions`);
          continue;
        }
        const attempts = p.expect.kind === 'runs' ? p.expect.attempts : 1;
        const phases = p.expect.kind === 'runs' ? p.expect.phases : ['Cancelled'];
        if (!phases.includes(phase)) problem(k, `phase ${phase}, expected ${phases}`);
        if (op.status?.attempts !== attempts)
          problem(k, `status.attempts ${op.status?.attempts}, expected ${attempts}`);
        const engine = p.spec.engine;
        // A helm Upgrade has its suspended rollback Job beside the runner (the releases were deployed).
        const perAttempt = PER_PVC.has(engine)
          ? INSTANCES[p.side][p.spec.targetRef.name]!
          : engine === 'helm'
            ? 2
            : 1;
        for (const c of mine) {
          if (c.kind !== CHILD_KIND[engine])
            problem(k, `child ${c.kind} ${c.name}: wrong kind for ${engine}`);
          const a = Number(c.attempt);
          if (!(a >= 1 && a <= (op.status?.attempts ?? 0)))
            problem(k, `child ${c.name} of attempt ${c.attempt}`);
        }
        for (let a = 1; a <= (op.status?.attempts ?? 0); a++) {
          const of = mine.filter((c) => Number(c.attempt) === a);
          if (of.length !== perAttempt)
            problem(k, `attempt ${a}: ${of.length} children, expected ${perAttempt}: ${names(of)}`);
          if (PER_PVC.has(engine) && new Set(of.map((c) => c.pvc)).size !== of.length)
            problem(k, `attempt ${a}: two children for one PVC: ${names(of)}`);
        }
        const current = mine.filter((c) => Number(c.attempt) === op.status?.attempts).map((c) => c.name);
        const refs = (op.status?.childRefs ?? []).map((r) => r.name);
        if (current.sort().join() !== refs.sort().join())
          problem(k, `status.childRefs ${refs} ≠ the current attempt's children ${current}`);
      }

      // A name recreated with a new uid is a duplicate, even if the first one is gone.
      const byName = new Map<string, SeenChild[]>();
      for (const c of recorder!.seen.values()) {
        const n = `${c.kind} ${c.namespace}/${c.name}`;
        byName.set(n, [...(byName.get(n) ?? []), c]);
        if (!byKey.has(c.operation)) problems.push(`${n} belongs to no planned Operation (${c.operation})`);
      }
      for (const [n, list] of byName)
        if (list.length > 1) problem(list[0]!.operation, `${n} created ${list.length} times`);

      const ran = plan.filter((p) => final.get(key(p))?.status?.startedAt);
      // Operations that conflict on one target never ran at the same time: each runs from its first
      // child's creation (API server clock) or startedAt to finishedAt (operator clock; one machine).
      for (const [i, a] of ran.entries()) {
        for (const b of ran.slice(i + 1)) {
          if (a.side !== b.side || a.spec.targetRef.name !== b.spec.targetRef.name) continue;
          if (!typesConflict(a.spec.type, b.spec.type)) continue;
          const sa = final.get(key(a))!.status!;
          const sb = final.get(key(b))!.status!;
          const [a0, a1, b0, b1] = [sa.startedAt, sa.finishedAt, sb.startedAt, sb.finishedAt].map((t) =>
            Date.parse(String(t)),
          );
          if (!(a1! <= b0! || b1! <= a0!)) {
            problem(
              key(a),
              `ran [${sa.startedAt}, ${sa.finishedAt}] together with ${key(b)} [${sb.startedAt}, ${sb.finishedAt}]`,
            );
            suspects.add(key(b));
          }
        }
      }

      const phases: Record<string, number> = {};
      for (const op of final.values())
        phases[op.status?.phase ?? '(none)'] = (phases[op.status?.phase ?? '(none)'] ?? 0) + 1;
      const kinds: Record<string, number> = {};
      for (const c of recorder!.seen.values()) kinds[c.kind] = (kinds[c.kind] ?? 0) + 1;
      console.log(
        `crash-safety summary: seed ${SEED}, ${kills} SIGKILLs, ${plan.length} Operations ${JSON.stringify(phases)}, children ${JSON.stringify(kinds)}, ${Math.round((Date.now() - started) / 1000)} s`,
      );
      if (problems.length > 0) {
        console.log(`crash-safety problems (seed ${SEED}):\n${problems.join('\n')}\n${await dump(suspects)}`);
      }
      expect(problems).toEqual([]);
      expect(kills).toBeGreaterThanOrEqual(Math.min(KILLS, 20));
      expect(plan.length).toBe(50);
      passed = true;
    },
    40 * 60_000,
  );
});

/** Breaks (a failed helm upgrade: Ready=False, ReleaseFailed) or fixes the TOGGLED releases. */
async function toggleReleases(kubeconfig: string, to: 'break' | 'fix'): Promise<void> {
  for (const [side, release] of TOGGLED) {
    const args = ['upgrade', release, TINY_CHART, '-n', NAMESPACES[side], '--set', 'persistence=true'];
    if (to === 'fix') await helm(kubeconfig, args);
    else await helm(kubeconfig, [...args, '--set', 'broken=true']).catch(() => undefined); // fails, as meant
  }
}

function names(children: readonly SeenChild[]): string {
  return children
    .map((c) => `${c.kind} ${c.namespace}/${c.name} (attempt ${c.attempt}${c.pvc ? `, ${c.pvc}` : ''})`)
    .join(', ');
}
