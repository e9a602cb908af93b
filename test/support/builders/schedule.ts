// Test builders for the scheduling decisions: CronOperations, ApplicationInstances and CronWorld, which
// decides and applies plans the way the controller does, on a FakeClock.

import { FakeClock } from '@vworkspace/runtime';
import {
  ANNOTATION_SKIP_NEXT,
  APPLICATION_INSTANCE,
  type ApplicationInstance,
  type CronOperation,
  type CronOperationSpec,
  type Operation,
  type OperationPhase,
} from '../../../operator/src/api/index.ts';
import { decideCron } from '../../../operator/src/schedule/cron-decide.ts';
import type { CronPlan } from '../../../operator/src/schedule/run-plan.ts';

export const MIN = 60_000;
export const HOUR = 60 * MIN;

export function cronOp(
  spec: Partial<CronOperationSpec> = {},
  annotations?: Record<string, string>,
  generation = 1,
): CronOperation {
  return {
    apiVersion: 'ops.vworkspace.io/v1alpha1',
    kind: 'CronOperation',
    metadata: {
      name: 'nightly',
      namespace: 'team',
      uid: 'uid-1',
      generation,
      creationTimestamp: '2025-06-01T00:00:00Z' as unknown as Date,
      ...(annotations ? { annotations } : {}),
    },
    spec: {
      schedule: '0 * * * *',
      timeZone: 'UTC',
      operationTemplate: {
        metadata: { labels: { kind: 'nightly' } },
        spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'shop' } },
      },
      ...spec,
    },
  };
}

export function finished(op: Operation, phase: OperationPhase, finishedAt: string): Operation {
  return { ...op, status: { phase, finishedAt } };
}

/**
 * A CronOperation, its Operations and a FakeClock: `reconcile()` decides and applies the plan the way the
 * controller does (create unless it exists, cancel, prune, status, skip-next removal).
 */
export class CronWorld {
  cron: CronOperation;
  ops: Operation[] = [];
  clock: FakeClock;
  plans: CronPlan[] = [];
  constructor(cron: CronOperation, start: string) {
    this.cron = cron;
    this.clock = new FakeClock(Date.parse(start));
  }
  instances: ApplicationInstance[] = [];
  decide(): CronPlan {
    return decideCron(this.cron, this.ops, new Date(this.clock.now()), this.instances);
  }
  apply(plan: CronPlan): CronPlan {
    for (const op of plan.create)
      if (!this.ops.some((o) => o.metadata.name === op.metadata.name)) this.ops.push(op);
    for (const n of plan.cancel) {
      const o = this.ops.find((x) => x.metadata.name === n);
      if (o) o.spec = { ...o.spec, cancel: true };
    }
    this.ops = this.ops.filter((o) => !plan.prune.includes(o.metadata.name ?? ''));
    if (plan.removeSkipNext) {
      const { [ANNOTATION_SKIP_NEXT]: _gone, ...rest } = this.cron.metadata.annotations ?? {};
      this.cron.metadata.annotations = rest;
    }
    this.cron.status = plan.status;
    this.plans.push(plan);
    return plan;
  }
  reconcile(): CronPlan {
    return this.apply(this.decide());
  }
  /** Advances the clock by `ms`, reconciling at every requeue the plans asked for (like the controller). */
  run(ms: number): void {
    const end = this.clock.now() + ms;
    for (;;) {
      const plan = this.reconcile();
      const wait = plan.requeueAfterMs;
      if (wait === undefined || this.clock.now() + wait > end) break;
      this.clock.advanceSync(wait);
    }
    this.clock.advanceSync(end - this.clock.now());
  }
  finish(name: string, phase: OperationPhase): void {
    this.ops = this.ops.map((o) =>
      o.metadata.name === name ? finished(o, phase, new Date(this.clock.now()).toISOString()) : o,
    );
  }
  names(): string[] {
    return this.ops.map((o) => o.metadata.name ?? '');
  }
}

export const slotName = (iso: string) => `nightly-${Date.parse(iso) / MIN}`;

/** An ApplicationInstance of namespace `team` with `labels`. */
export function anInstance(name: string, labels: Record<string, string> = {}): ApplicationInstance {
  return {
    apiVersion: APPLICATION_INSTANCE.apiVersion,
    kind: APPLICATION_INSTANCE.kind,
    metadata: { name, namespace: 'team', uid: `${name}-uid`, generation: 1, labels },
    spec: { appRef: { catalogId: 'shop' }, release: { name } },
  };
}
