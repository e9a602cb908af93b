// Test-object builders for admission tests: requests, Operations, schedulers and facts.

import {
  type AccessCheck,
  type AccessResult,
  accessKey,
  type Facts,
  isRecord,
  type Lookup,
  type SourceOperation,
  type TargetInstance,
} from '../../../operator/src/admission/decision.ts';
import type {
  AdmissionRequest,
  AdmissionResponse,
  UserInfo,
} from '../../../operator/src/admission/review.ts';
import { type StampExpectation, schedulerStamps } from '../../../operator/src/admission/stamps.ts';
import { BUILTIN_TEMPLATES, type Template } from '../../../operator/src/catalog/index.ts';

export const NS = 'team-a';

export function anOperation(spec: Record<string, unknown> = {}, annotations?: Record<string, string>) {
  return {
    apiVersion: 'ops.vworkspace.io/v1alpha1',
    kind: 'Operation',
    metadata: { name: 'op1', namespace: NS, ...(annotations ? { annotations } : {}) },
    spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'shop' }, ...spec },
  };
}

export function aCronOperation(spec: Record<string, unknown> = {}, opSpec: Record<string, unknown> = {}) {
  return {
    apiVersion: 'ops.vworkspace.io/v1alpha1',
    kind: 'CronOperation',
    metadata: { name: 'nightly', namespace: NS },
    spec: {
      schedule: '0 2 * * *',
      timeZone: 'Europe/Berlin',
      operationTemplate: {
        spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'shop' }, ...opSpec },
      },
      ...spec,
    },
  };
}

export function aWatchOperation(opSpec: Record<string, unknown> = {}) {
  return {
    apiVersion: 'ops.vworkspace.io/v1alpha1',
    kind: 'WatchOperation',
    metadata: { name: 'pre-upgrade', namespace: NS },
    spec: {
      triggers: { fieldPaths: ['spec.appRef.chart.version'] },
      operationTemplate: { spec: { type: 'Backup', engine: 'velero', ...opSpec } },
    },
  };
}

export function aRequest(
  object: unknown,
  opts: { operation?: AdmissionRequest['operation']; oldObject?: unknown; user?: string | UserInfo } = {},
): AdmissionRequest {
  const user = opts.user ?? 'alice';
  const req: AdmissionRequest = {
    uid: 'uid-1',
    kind: { group: 'ops.vworkspace.io', version: 'v1alpha1', kind: 'Operation' },
    resource: { group: 'ops.vworkspace.io', version: 'v1alpha1', resource: 'operations' },
    namespace: NS,
    operation: opts.operation ?? 'CREATE',
    userInfo: typeof user === 'string' ? { username: user, groups: ['system:authenticated'] } : user,
    object,
    ...(opts.oldObject !== undefined ? { oldObject: opts.oldObject } : {}),
  };
  // The validating webhook sees a CronOperation/WatchOperation after the mutating one stamped it.
  const kind = isRecord(object) ? object.kind : undefined;
  return kind === 'CronOperation' || kind === 'WatchOperation'
    ? stamped(req, schedulerStamps(kind, req))
    : req;
}

/** `req` with the stamps the mutating webhook writes where the request left them alone. */
function stamped(req: AdmissionRequest, expectations: readonly StampExpectation[]): AdmissionRequest {
  if (!isRecord(req.object) || !isRecord(req.object.metadata)) return req;
  const meta = req.object.metadata;
  const annotations: Record<string, unknown> = isRecord(meta.annotations) ? { ...meta.annotations } : {};
  for (const s of expectations) {
    if (s.actual !== undefined && s.actual !== s.old) continue;
    if (s.expected === undefined) delete annotations[s.key];
    else annotations[s.key] = s.expected;
  }
  return { ...req, object: { ...req.object, metadata: { ...meta, annotations } } };
}

/** The target `shop`, advertising velero backups. */
export function aTarget(overrides: Partial<TargetInstance> = {}): TargetInstance {
  return { name: 'shop', annotations: { 'ops.vworkspace.io/backup': 'velero' }, labels: {}, ...overrides };
}

/** Facts where everything exists and everything is allowed, unless overridden. */
export function someFacts(
  opts: {
    templates?: Lookup<readonly Template[]>;
    target?: Lookup<TargetInstance | undefined>;
    allow?: (c: AccessCheck) => Lookup<AccessResult>;
    checks?: AccessCheck[];
    /** Operations parametersFrom reads, by name. */
    sources?: Record<string, SourceOperation | undefined>;
  } = {},
): Facts {
  const checks = opts.checks ?? [
    ...['backup', 'restore', 'upgrade', 'migration', 'runcommand', 'runbook', 'approve'].flatMap((verb) => [
      { verb, name: 'shop' },
      { verb },
    ]),
    { verb: 'list', resource: 'operations' },
    ...Object.keys(opts.sources ?? {}).map(
      (name) => ({ verb: 'get', resource: 'operations', name }) as const,
    ),
  ];
  const decide = opts.allow ?? (() => ({ ok: true, value: { allowed: true } }) as const);
  return {
    templates: opts.templates ?? { ok: true, value: BUILTIN_TEMPLATES },
    target: opts.target ?? { ok: true, value: aTarget() },
    access: Object.fromEntries(checks.map((c) => [accessKey(c), decide(c)])),
    ...(opts.sources
      ? {
          sources: Object.fromEntries(
            Object.entries(opts.sources).map(([n, v]) => [n, { ok: true, value: v }] as const),
          ),
        }
      : {}),
  };
}

/** An Operation parametersFrom may read: a Succeeded velero Backup with its backupName, unless overridden. */
export function aSource(overrides: Partial<SourceOperation> = {}): SourceOperation {
  return {
    name: 'b1',
    type: 'Backup',
    engine: 'velero',
    template: 'velero-backup',
    phase: 'Succeeded',
    outputs: { backupName: 'b1-abcde' },
    dryRun: false,
    ...overrides,
  };
}

export function causesOf(res: AdmissionResponse): { field: string; message: string }[] {
  return (res.status?.details?.causes ?? []).map((c) => ({ field: c.field, message: c.message }));
}

export function fieldsOf(res: AdmissionResponse): string[] {
  return causesOf(res).map((c) => c.field);
}

export function decodePatch(res: AdmissionResponse): unknown {
  return res.patch ? JSON.parse(Buffer.from(res.patch, 'base64').toString('utf8')) : undefined;
}
