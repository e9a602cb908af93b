#!/usr/bin/env node

// kubectl vws: the kubectl plugin for vworkspace Operations (docs/kubectl-vws.md). kubectl runs
// `kubectl-vws` from PATH for `kubectl vws ...`. The thin shell: the kubeconfig, the operator's own REST
// client and list+watch (runtime/), the pure parsing (args.ts), requests (requests.ts) and output
// (format.ts). Writes go through the API server as the user, so the admission webhook checks them.

import { KubeConfig } from '@kubernetes/client-node';
import {
  formatTime,
  KubeApiError,
  kubeListerWatcher,
  PATCH_TYPES,
  RestClient,
  resourcePath,
} from '@vworkspace/runtime';
import {
  ANNOTATION_ABANDON,
  ANNOTATION_RESUME,
  APPLICATION_INSTANCE,
  type ApplicationInstance,
  CRON_OPERATION,
  type CronOperation,
  OPERATION,
  type Operation,
  type ResourceId,
  WATCH_OPERATION,
  type WatchOperation,
} from '../api/index.ts';
import { printable } from '../api/printable.ts';
import { BUILTIN_TEMPLATES } from '../catalog/index.ts';
import { type Command, type Globals, parseArgs } from './args.ts';
import { backfillOperation, backfillSlots, backfillTargets } from './backfill.ts';
import {
  cronStatus,
  historyTable,
  instanceStatus,
  isFinished,
  operationStatus,
  progressLine,
  watchStatus,
} from './format.ts';
import type { ObjectRef } from './object-ref.ts';
import {
  approvePatch,
  cancelPatch,
  historyQuery,
  manualRunPrefix,
  operationFromTemplate,
  restoreOperation,
  rolloutControlProblem,
  rolloutPatch,
  runNowPatch,
} from './requests.ts';

export interface Io {
  out(line: string): void;
  err(line: string): void;
}

const KIND_RESOURCES: Record<Exclude<ObjectRef['kind'], 'template'>, ResourceId> = {
  operation: OPERATION,
  cronoperation: CRON_OPERATION,
  watchoperation: WATCH_OPERATION,
  applicationinstance: APPLICATION_INSTANCE,
};

class Session {
  readonly kc: KubeConfig;
  readonly client: RestClient;
  readonly ns: string;

  constructor(globals: Globals) {
    this.kc = new KubeConfig();
    if (globals.kubeconfig) this.kc.loadFromFile(globals.kubeconfig);
    else this.kc.loadFromDefault();
    if (globals.context) this.kc.setCurrentContext(globals.context);
    this.client = new RestClient(this.kc);
    this.ns =
      globals.namespace ?? this.kc.getContextObject(this.kc.getCurrentContext())?.namespace ?? 'default';
  }

  path(r: ResourceId, name?: string, ns: string | undefined = this.ns): string {
    return resourcePath(
      { group: r.group, version: r.version, plural: r.plural, ...(ns ? { namespace: ns } : {}) },
      name,
    );
  }

  get<T>(r: ResourceId, name: string): Promise<T> {
    return this.client.request<T>({ method: 'GET', path: this.path(r, name) });
  }

  patch<T>(r: ResourceId, name: string, body: unknown): Promise<T> {
    return this.client.request<T>({
      method: 'PATCH',
      path: this.path(r, name),
      body,
      contentType: PATCH_TYPES.merge,
    });
  }

  /**
   * Watches one object (list + watch by name, again after a dropped watch) and calls `onChange` with each
   * new version until it returns true; resolves with that version, or undefined after `timeoutMs`.
   */
  async follow<T extends { metadata?: { resourceVersion?: string } }>(
    r: ResourceId,
    name: string,
    onChange: (obj: T) => boolean,
    timeoutMs = 0,
  ): Promise<T | undefined> {
    const lw = kubeListerWatcher<T & { metadata: object }>(
      this.kc,
      { group: r.group, version: r.version, plural: r.plural, namespace: this.ns },
      this.client,
    );
    const stop = new AbortController();
    const timer = timeoutMs > 0 ? setTimeout(() => stop.abort(), timeoutMs) : undefined;
    const fieldSelector = `metadata.name=${name}`;
    let result: T | undefined;
    let seen = '';
    const see = (obj: T) => {
      const rv = obj.metadata?.resourceVersion ?? '';
      if (rv === seen) return;
      seen = rv;
      if (onChange(obj)) {
        result = obj;
        stop.abort();
      }
    };
    try {
      while (!stop.signal.aborted) {
        const list = await lw.list({ fieldSelector }, stop.signal);
        const obj = list.items[0];
        if (!obj) throw new Error(`${r.kind} ${this.ns}/${name} not found`);
        see(obj);
        if (stop.signal.aborted) break;
        await lw.watch(
          {
            resourceVersion: list.resourceVersion,
            fieldSelector,
            allowWatchBookmarks: false,
            timeoutSeconds: 300,
          },
          (type, o) => {
            if (type === 'ADDED' || type === 'MODIFIED') see(o as T);
            if (type === 'DELETED') stop.abort();
          },
          stop.signal,
        );
      }
    } catch (err) {
      if (!stop.signal.aborted) throw err;
    } finally {
      clearTimeout(timer);
    }
    return result;
  }
}

/** Follows an Operation, one line per change, until it ends: 0 if it Succeeded. */
async function followOperation(s: Session, name: string, io: Io): Promise<number> {
  let last = '';
  const done = await s.follow<Operation>(OPERATION, name, (op) => {
    const line = progressLine(op, new Date());
    if (line.slice(9) !== last) io.out(line);
    last = line.slice(9);
    return isFinished(op);
  });
  return done?.status?.phase === 'Succeeded' ? 0 : 1;
}

async function runCron(s: Session, c: Extract<Command, { cmd: 'run-cron' }>, io: Io): Promise<number> {
  const value = c.request ?? new Date().toISOString();
  const cron = await s.patch<CronOperation>(CRON_OPERATION, c.name, runNowPatch(value));
  io.out(`cronoperation.ops.vworkspace.io/${c.name} run requested (ops.vworkspace.io/run-now=${value})`);
  if (!c.wait) return 0;
  const recorded = await s.follow<CronOperation>(
    CRON_OPERATION,
    c.name,
    (x) => x.status?.manualRun?.request === value && (x.status.manualRun.phase !== 'Pending' || !c.follow),
    c.follow ? 0 : 60_000,
  );
  const run = recorded?.status?.manualRun;
  if (!run) {
    io.err(
      `the operator has not acted on the request within a minute: is it running? (kubectl vws status cronoperation/${c.name})`,
    );
    return 1;
  }
  if (run.phase === 'Pending') {
    io.out(
      `waiting: ${recorded.status?.queue?.find((q) => q.request === value)?.targets.join(', ')} (concurrencyPolicy, maxConcurrent or a paused target; see kubectl vws status cronoperation/${c.name})`,
    );
    return 0;
  }
  const prefix = manualRunPrefix(cron, value);
  const list = await s.client.request<{ items: Operation[] }>({
    method: 'GET',
    path: s.path(OPERATION),
    query: { labelSelector: `ops.vworkspace.io/cron-operation=${c.name}` },
  });
  const created = list.items
    .map((o) => o.metadata.name ?? '')
    .filter((n) => n === prefix || n.startsWith(`${prefix}-`));
  for (const n of created.sort()) io.out(`operation.ops.vworkspace.io/${n} created`);
  if (c.follow && created.length === 1) return followOperation(s, created[0]!, io);
  return 0;
}

async function runTemplate(
  s: Session,
  c: Extract<Command, { cmd: 'run-template' }>,
  io: Io,
): Promise<number> {
  const built = operationFromTemplate(c, s.ns, BUILTIN_TEMPLATES);
  if (!built.ok) {
    io.err(`error: ${built.message}`);
    return 1;
  }
  const op = await s.client.request<Operation>({ method: 'POST', path: s.path(OPERATION), body: built.op });
  io.out(`operation.ops.vworkspace.io/${op.metadata.name} created`);
  return c.follow ? followOperation(s, op.metadata.name ?? '', io) : 0;
}

async function restore(s: Session, c: Extract<Command, { cmd: 'restore' }>, io: Io): Promise<number> {
  const op = await s.client.request<Operation>({
    method: 'POST',
    path: s.path(OPERATION),
    body: restoreOperation(c, s.ns),
  });
  io.out(`operation.ops.vworkspace.io/${op.metadata.name} created`);
  return c.follow ? followOperation(s, op.metadata.name ?? '', io) : 0;
}

async function status(s: Session, c: Extract<Command, { cmd: 'status' }>, io: Io): Promise<number> {
  const ref = c.ref as ObjectRef & { kind: Exclude<ObjectRef['kind'], 'template'> };
  const obj = await s.get<never>(KIND_RESOURCES[ref.kind], ref.name);
  const text =
    ref.kind === 'operation'
      ? operationStatus(obj)
      : ref.kind === 'cronoperation'
        ? cronStatus(obj)
        : ref.kind === 'watchoperation'
          ? watchStatus(obj)
          : instanceStatus(obj);
  io.out(text);
  if (!c.watch) return 0;
  if (ref.kind !== 'operation') {
    io.err('-w follows Operations only');
    return 0;
  }
  io.out('');
  return followOperation(s, ref.name, io);
}

async function history(
  s: Session,
  c: Extract<Command, { cmd: 'history' }>,
  all: boolean,
  io: Io,
): Promise<number> {
  const q = historyQuery(c.ref, c.type);
  const list = await s.client.request<{ items: Operation[] }>({
    method: 'GET',
    path: s.path(OPERATION, undefined, all ? '' : s.ns),
    ...(q.labelSelector ? { query: { labelSelector: q.labelSelector } } : {}),
  });
  const ops = list.items
    .filter(q.keep)
    .sort(
      (a, b) =>
        Date.parse(String(b.metadata.creationTimestamp)) - Date.parse(String(a.metadata.creationTimestamp)),
    )
    .slice(0, c.limit);
  io.out(historyTable(ops, all));
  return 0;
}

/**
 * Creates, as the user, the Operations of a CronOperation's slots in [from, to]. An existing one (the slot
 * ran, or was backfilled) is reported and left alone; any other refusal is printed as the server says it,
 * and the rest still go. Exit 0 when every slot has its Operation.
 */
/** Resume or abandon a scheduler's rolled-out run: the annotation, patched as the user (the webhook checks it). */
async function rolloutControl(
  s: Session,
  verb: 'resume' | 'abandon',
  kind: 'cronoperation' | 'watchoperation',
  name: string,
  io: Io,
): Promise<number> {
  const def = kind === 'watchoperation' ? WATCH_OPERATION : CRON_OPERATION;
  const owner = await s.get<CronOperation | WatchOperation>(def, name);
  const problem = rolloutControlProblem(owner, verb);
  if (problem) {
    io.err(`error: ${problem}`);
    return 1;
  }
  const value = formatTime(Date.now());
  await s.patch(def, name, rolloutPatch(verb, value));
  io.out(
    `${kind}.ops.vworkspace.io/${name} ${verb} requested (${verb === 'resume' ? ANNOTATION_RESUME : ANNOTATION_ABANDON}=${value}); follow it with kubectl vws status ${kind}/${name}`,
  );
  return 0;
}

async function backfill(s: Session, c: Extract<Command, { cmd: 'backfill' }>, io: Io): Promise<number> {
  const cron = await s.get<CronOperation>(CRON_OPERATION, c.name);
  const planned = backfillSlots(cron, c.from, c.to, new Date());
  if (!planned.ok) {
    io.err(`error: ${planned.message}`);
    return 1;
  }
  const instances = cron.spec.targetSelector
    ? (
        await s.client.request<{ items: ApplicationInstance[] }>({
          method: 'GET',
          path: s.path(APPLICATION_INSTANCE),
        })
      ).items
    : await s
        .get<ApplicationInstance>(
          APPLICATION_INSTANCE,
          cron.spec.operationTemplate.spec.targetRef?.name ?? '',
        )
        .then(
          (i) => [i],
          () => [], // object.* substitutions then keep the template's values, as for the operator
        );
  const byName = new Map(instances.map((i) => [i.metadata.name ?? '', i]));
  let failed = 0;
  for (const slot of planned.slots) {
    for (const target of backfillTargets(cron, instances)) {
      const op = backfillOperation(cron, slot, target, byName.get(target));
      const name = op.metadata.name ?? '';
      const at = formatTime(slot);
      try {
        await s.client.request<Operation>({ method: 'POST', path: s.path(OPERATION), body: op });
        io.out(`operation.ops.vworkspace.io/${name} created (slot ${at})`);
      } catch (err) {
        if (err instanceof KubeApiError && err.code === 409) {
          io.out(`operation.ops.vworkspace.io/${name} already exists (slot ${at} ran before): not run again`);
          continue;
        }
        if (!(err instanceof KubeApiError)) throw err;
        failed++;
        const body = typeof err.body === 'object' ? err.body : undefined;
        io.err(
          `Error from server (${body?.reason ?? err.code}) for slot ${at}: ${body?.message ?? err.message}`,
        );
      }
    }
  }
  if (planned.slots.length === 0) io.out(`no slot of "${cron.spec.schedule}" falls in the range`);
  return failed > 0 ? 1 : 0;
}

export async function main(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseArgs(argv);
  if (!parsed.ok) {
    io.err(`error: ${parsed.message}`);
    return 2;
  }
  const c = parsed.command;
  if (c.cmd === 'help') {
    io.out(c.text);
    return 0;
  }
  try {
    const s = new Session(parsed.globals);
    switch (c.cmd) {
      case 'run-cron':
        return await runCron(s, c, io);
      case 'run-template':
        return await runTemplate(s, c, io);
      case 'restore':
        return await restore(s, c, io);
      case 'approve':
        await s.patch(OPERATION, c.name, approvePatch);
        io.out(`operation.ops.vworkspace.io/${c.name} approved`);
        return 0;
      case 'cancel':
        await s.patch(OPERATION, c.name, cancelPatch);
        io.out(`operation.ops.vworkspace.io/${c.name} cancel requested`);
        return 0;
      case 'status':
        return await status(s, c, io);
      case 'history':
        return await history(s, c, parsed.globals.allNamespaces, io);
      case 'backfill':
        return await backfill(s, c, io);
      case 'resume':
      case 'abandon':
        return await rolloutControl(s, c.cmd, c.kind, c.name, io);
    }
  } catch (err) {
    // As kubectl says it: the API server's reason and message (a webhook denial names the field).
    if (err instanceof KubeApiError) {
      const body = typeof err.body === 'object' ? err.body : undefined;
      io.err(`Error from server (${body?.reason ?? err.code}): ${body?.message ?? err.message}`);
    } else io.err(`error: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}

if (import.meta.main) {
  // Last line of defence: nothing the cluster holds reaches the terminal with control characters.
  const io: Io = {
    out: (l) => process.stdout.write(`${printable(l)}\n`),
    err: (l) => process.stderr.write(`${printable(l)}\n`),
  };
  process.on('SIGINT', () => process.exit(130));
  void main(process.argv.slice(2), io).then((code) => process.exit(code));
}
