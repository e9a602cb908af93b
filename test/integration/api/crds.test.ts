// The CRDs generated from operator/src/api/ on a real API server: the CEL rules and schema bounds are
// enforced without the webhook (immutability, one-way cancel, engine/type pairs, name limits, schedules).
import { request } from 'node:https';
import { ApiException, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  APPLICATION_INSTANCE,
  CRON_OPERATION,
  OPERATION,
  type ResourceId,
  WATCH_OPERATION,
} from '../../../operator/src/api/index.ts';
import { adminKubeConfig, createNamespace } from '../support/kube.ts';

type Obj = Record<string, unknown> & {
  metadata: { name: string; resourceVersion?: string; annotations?: Record<string, string> };
};

let kc: KubeConfig;
let api: CustomObjectsApi;
let ns: string;

beforeAll(async () => {
  kc = adminKubeConfig();
  api = kc.makeApiClient(CustomObjectsApi);
  ns = await createNamespace(kc, 'api');
});

function target(r: ResourceId) {
  return { group: r.group, version: r.version, plural: r.plural, namespace: ns };
}

async function create(r: ResourceId, body: Obj): Promise<Obj> {
  return (await api.createNamespacedCustomObject({ ...target(r), body })) as Obj;
}

async function replace(r: ResourceId, body: Obj): Promise<Obj> {
  return (await api.replaceNamespacedCustomObject({ ...target(r), name: body.metadata.name, body })) as Obj;
}

/** The API server's refusal message, or a failure when it accepted the request. */
async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiException && err.code === 422) {
      return typeof err.body === 'string' ? err.body : JSON.stringify(err.body);
    }
    throw err;
  }
  throw new Error('the API server accepted a request it should have refused');
}

let seq = 0;
function operation(spec: Record<string, unknown> = {}, name = `op-${++seq}`): Obj {
  return {
    apiVersion: OPERATION.apiVersion,
    kind: OPERATION.kind,
    metadata: { name },
    spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'nextcloud' }, ...spec },
  };
}

/** Creates `op`, then sends it back with `edit` applied to its spec. */
async function editSpec(
  op: Obj,
  edit: (spec: Record<string, unknown>) => Record<string, unknown>,
): Promise<Obj> {
  const created = await create(OPERATION, op);
  return replace(OPERATION, {
    ...created,
    spec: edit(structuredClone(created.spec) as Record<string, unknown>),
  });
}

describe('Operation', () => {
  it('accepts a well-formed Operation', async () => {
    const op = await create(
      OPERATION,
      operation({ parameters: { ttl: '720h', nested: { a: [1, 2] } }, policy: { retryLimit: 2 } }),
    );
    expect((op.spec as { parameters: unknown }).parameters).toEqual({ ttl: '720h', nested: { a: [1, 2] } });
  });

  type Spec = Record<string, unknown>;
  const without = (key: string) => (s: Spec) =>
    Object.fromEntries(Object.entries(s).filter(([k]) => k !== key));
  it.each<[string, (s: Spec) => Spec, string]>([
    ['type', (s) => ({ ...s, type: 'Restore' }), 'spec.type is immutable'],
    ['engine', (s) => ({ ...s, engine: 'volsync' }), 'spec.engine is immutable'],
    ['targetRef', (s) => ({ ...s, targetRef: { name: 'other' } }), 'spec.targetRef is immutable'],
    [
      'a parameter value',
      (s) => ({ ...s, parameters: { ttl: '1h', deep: { x: 1 } } }),
      'spec.parameters is immutable',
    ],
    [
      'a nested parameter',
      (s) => ({ ...s, parameters: { ttl: '720h', deep: { x: 2 } } }),
      'spec.parameters is immutable',
    ],
    [
      'an added parameter',
      (s) => ({ ...s, parameters: { ttl: '720h', deep: { x: 1 }, more: true } }),
      'spec.parameters is immutable',
    ],
    ['removed parameters', without('parameters'), 'spec.parameters is immutable'],
    ['an added template', (s) => ({ ...s, template: 'velero-backup' }), 'spec.template is immutable'],
    ['the policy', (s) => ({ ...s, policy: { retryLimit: 3 } }), 'spec.policy is immutable'],
    ['removed policy', without('policy'), 'spec.policy is immutable'],
  ])('refuses a change of %s after create', async (_what, edit, message) => {
    const op = operation({ parameters: { ttl: '720h', deep: { x: 1 } }, policy: { retryLimit: 1 } });
    expect(await refusal(editSpec(op, edit))).toContain(message);
  });

  it('lets cancel go from unset to true, and never back', async () => {
    const created = await create(OPERATION, operation());
    const cancelled = await replace(OPERATION, {
      ...created,
      spec: { ...(created.spec as object), cancel: true },
    });
    expect((cancelled.spec as { cancel: boolean }).cancel).toBe(true);
    const back = { ...cancelled, spec: { ...(cancelled.spec as object), cancel: false } };
    expect(await refusal(replace(OPERATION, back))).toContain('spec.cancel cannot be unset once true');
    const { cancel: _, ...without } = cancelled.spec as Record<string, unknown>;
    expect(await refusal(replace(OPERATION, { ...cancelled, spec: without }))).toContain(
      'spec.cancel cannot be unset once true',
    );
  });

  it('lets cancel go from false to true', async () => {
    const created = await create(OPERATION, operation({ cancel: false }));
    const cancelled = await replace(OPERATION, {
      ...created,
      spec: { ...(created.spec as object), cancel: true },
    });
    expect((cancelled.spec as { cancel: boolean }).cancel).toBe(true);
  });

  it('refuses a target name that is not a DNS label, with a message saying what it must be', async () => {
    const body = await refusal(create(OPERATION, operation({ targetRef: { name: 'Next_Cloud' } })));
    expect(body).toContain('spec.targetRef.name');
    expect(body).toContain('must be a DNS label');
    expect(await refusal(create(OPERATION, operation({ targetRef: { name: '' } })))).toContain(
      'spec.targetRef.name',
    );
  });

  it('refuses an engine that cannot run the type, and accepts job and workflow for any type', async () => {
    const body = await refusal(create(OPERATION, operation({ type: 'Backup', engine: 'helm' })));
    expect(body).toContain('spec.engine');
    expect(body).toContain('helm runs Upgrade');
    await create(OPERATION, operation({ type: 'Backup', engine: 'workflow' }));
    await create(OPERATION, operation({ type: 'Migration', engine: 'job' }));
  });

  it('refuses unknown enum values and out-of-range policy', async () => {
    expect(await refusal(create(OPERATION, operation({ type: 'Snapshot' })))).toContain('spec.type');
    expect(await refusal(create(OPERATION, operation({ policy: { retryLimit: 11 } })))).toContain(
      'spec.policy.retryLimit',
    );
  });

  it('limits the name so derived child names fit', async () => {
    expect(await refusal(create(OPERATION, operation({}, 'x'.repeat(57))))).toContain(
      'at most 56 characters',
    );
    await create(OPERATION, operation({}, 'y'.repeat(56)));
  });

  it('ignores spec in status updates and validates the condition shape', async () => {
    const created = await create(OPERATION, operation());
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const condition = {
      type: 'Succeeded',
      status: 'Unknown',
      reason: 'TargetNotReady',
      message: 'wait',
      lastTransitionTime: now,
    };
    const updated = (await api.replaceNamespacedCustomObjectStatus({
      ...target(OPERATION),
      name: created.metadata.name,
      body: { ...created, status: { phase: 'Blocked', conditions: [condition] } },
    })) as Obj;
    expect((updated.status as { phase: string }).phase).toBe('Blocked');
    const bad = { ...updated, status: { conditions: [{ ...condition, reason: 'not a reason!' }] } };
    expect(
      await refusal(
        api.replaceNamespacedCustomObjectStatus({
          ...target(OPERATION),
          name: created.metadata.name,
          body: bad,
        }),
      ),
    ).toContain('reason');
  });
});

/** `kubectl get` as the API server renders it: the Table of the printer columns. */
async function table(r: ResourceId): Promise<{ columns: string[]; rows: Record<string, unknown>[] }> {
  const url = new URL(
    `${kc.getCurrentCluster()!.server}/apis/${r.group}/${r.version}/namespaces/${ns}/${r.plural}`,
  );
  const opts: Parameters<typeof request>[1] = {
    method: 'GET',
    headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
  };
  await kc.applyToHTTPSOptions(opts);
  const body = await new Promise<string>((ok, fail) => {
    const req = request(url, opts, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => {
        text += c.toString();
      });
      res.on('end', () => ok(text));
    });
    req.on('error', fail);
    req.end();
  });
  const t = JSON.parse(body) as {
    columnDefinitions: { name: string }[];
    rows: { cells: unknown[]; object: { metadata: { name: string } } }[];
  };
  const columns = t.columnDefinitions.map((c) => c.name);
  return {
    columns,
    rows: t.rows.map((row) => Object.fromEntries(columns.map((c, i) => [c, row.cells[i]]))),
  };
}

describe('printer columns', () => {
  it('shows the Operation columns, with the reason of the Succeeded condition', async () => {
    const created = await create(OPERATION, operation({}, 'columns-op'));
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const conditions = [
      {
        type: 'Accepted',
        status: 'True',
        reason: 'TemplateValidated',
        message: 'ok',
        lastTransitionTime: now,
      },
      {
        type: 'Succeeded',
        status: 'Unknown',
        reason: 'VeleroBackupInProgress',
        message: 'running',
        lastTransitionTime: now,
      },
    ];
    await api.replaceNamespacedCustomObjectStatus({
      ...target(OPERATION),
      name: created.metadata.name,
      body: { ...created, status: { phase: 'Running', conditions } },
    });
    const { columns, rows } = await table(OPERATION);
    expect(columns).toEqual(['Name', 'Type', 'Engine', 'Target', 'Phase', 'Reason', 'Age', 'Queue', 'Child']);
    expect(rows.find((r) => r.Name === 'columns-op')).toMatchObject({
      Type: 'Backup',
      Engine: 'velero',
      Target: 'nextcloud',
      Phase: 'Running',
      Reason: 'VeleroBackupInProgress',
    });
  });
});

function cron(spec: Record<string, unknown>, name = `cron-${++seq}`): Obj {
  return {
    apiVersion: CRON_OPERATION.apiVersion,
    kind: CRON_OPERATION.kind,
    metadata: { name },
    spec: {
      schedule: '0 2 * * 6',
      operationTemplate: { spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'nextcloud' } } },
      ...spec,
    },
  };
}

describe('CronOperation', () => {
  it('applies the documented defaults', async () => {
    const c = await create(CRON_OPERATION, cron({}));
    expect(c.spec).toMatchObject({
      timeZone: 'UTC',
      concurrencyPolicy: 'Allow',
      suspend: false,
      successfulHistoryLimit: 3,
      failedHistoryLimit: 1,
    });
  });

  it.each(['@daily', '*/15 * * * *', '0 2 * * MON-FRI'])('accepts the schedule %s', async (schedule) => {
    await create(CRON_OPERATION, cron({ schedule, timeZone: 'America/St_Johns' }));
  });

  it.each(['0 2 * * * *', '0 2 * *', 'TZ=Europe/Berlin 0 2 * * *'])(
    'refuses the schedule %s',
    async (schedule) => {
      expect(await refusal(create(CRON_OPERATION, cron({ schedule })))).toContain(
        'five space-separated cron fields',
      );
    },
  );

  it('refuses an engine/type pair the engine cannot run in the template', async () => {
    const spec = {
      operationTemplate: { spec: { type: 'Upgrade', engine: 'snapshot', targetRef: { name: 'a' } } },
    };
    expect(await refusal(create(CRON_OPERATION, cron(spec)))).toContain('snapshot runs Backup, Restore');
  });

  it('limits the name so <name>-<unix-minutes> fits', async () => {
    expect(await refusal(create(CRON_OPERATION, cron({}, 'c'.repeat(48))))).toContain(
      'at most 47 characters',
    );
  });
});

function watch(spec: Record<string, unknown>): Obj {
  return {
    apiVersion: WATCH_OPERATION.apiVersion,
    kind: WATCH_OPERATION.kind,
    metadata: { name: `watch-${++seq}` },
    spec: {
      triggers: { fieldPaths: ['spec.appRef.chart.version'] },
      operationTemplate: { spec: { type: 'Backup', engine: 'velero' } },
      ...spec,
    },
  };
}

describe('WatchOperation', () => {
  it('accepts label and field triggers with a selector', async () => {
    await create(
      WATCH_OPERATION,
      watch({
        selector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['staging'] }] },
        triggers: { labels: ['maintenance.example.com/backup-now'], fieldPaths: ["metadata.labels['tier']"] },
      }),
    );
  });

  it('refuses an empty trigger set and status paths', async () => {
    expect(await refusal(create(WATCH_OPERATION, watch({ triggers: {} })))).toContain(
      'set at least one trigger',
    );
    expect(
      await refusal(create(WATCH_OPERATION, watch({ triggers: { fieldPaths: ['status.phase'] } }))),
    ).toContain('spec.triggers.fieldPaths[0]');
  });

  it('refuses In without values in the selector', async () => {
    const selector = { matchExpressions: [{ key: 'tier', operator: 'In' }] };
    expect(await refusal(create(WATCH_OPERATION, watch({ selector })))).toContain('values must be non-empty');
  });
});

describe('ApplicationInstance', () => {
  const instance = (chart: Record<string, unknown>): Obj => ({
    apiVersion: APPLICATION_INSTANCE.apiVersion,
    kind: APPLICATION_INSTANCE.kind,
    metadata: { name: `ai-${++seq}`, annotations: { 'ops.vworkspace.io/backup': 'velero' } },
    spec: { appRef: { catalogId: 'nextcloud', chart }, release: { name: 'nextcloud' } },
  });

  it('accepts an OCI chart and refuses a URL that does not fit the source type', async () => {
    await create(
      APPLICATION_INSTANCE,
      instance({
        sourceType: 'oci',
        url: 'oci://registry.example.com/charts',
        name: 'nextcloud',
        version: '6.6.0',
      }),
    );
    const body = await refusal(
      create(
        APPLICATION_INSTANCE,
        instance({
          sourceType: 'oci',
          url: 'https://charts.example.com',
          name: 'nextcloud',
          version: '6.6.0',
        }),
      ),
    );
    expect(body).toContain('spec.appRef.chart.url');
  });
});
