// Helpers for the scheduling controllers' integration tests: the controllers in-process on a FakeClock,
// object builders, polling, REST paths, Operation status.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  EventRecorder,
  type FakeClock,
  formatTime,
  InformerFactory,
  type KubeClient,
  type KubeRequest,
  type LeaderElectionOptions,
  Manager,
  PATCH_TYPES,
  type RestClient,
  RestMapper,
  RuntimeMetrics,
  resourcePath,
  silentLogger,
} from '@vworkspace/runtime';
import {
  APPLICATION_INSTANCE,
  type ApplicationInstance,
  CRON_OPERATION,
  type CronOperation,
  type CronOperationSpec,
  OPERATION,
  type Operation,
  type ResourceId,
  WATCH_OPERATION,
  type WatchOperation,
  type WatchOperationSpec,
} from '../../../operator/src/api/index.ts';
import { setupCronController } from '../../../operator/src/schedule/cron-controller.ts';
import { setupWatchController } from '../../../operator/src/schedule/watch-controller.ts';
import { testClient } from '../../support/clients.ts';
import { eventually } from '../../support/eventually.ts';

export { eventually };

export function pathOf(r: ResourceId, namespace: string, name?: string, sub?: string): string {
  return resourcePath({ group: r.group, version: r.version, plural: r.plural, namespace }, name, sub);
}

export const kinds = {
  op: OPERATION,
  cron: CRON_OPERATION,
  watch: WATCH_OPERATION,
  instance: APPLICATION_INSTANCE,
};

export async function listOperations(client: RestClient, ns: string): Promise<Operation[]> {
  const list = await client.request<{ items: Operation[] }>({ method: 'GET', path: pathOf(OPERATION, ns) });
  return list.items.sort((a, b) => ((a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : 1));
}

/**
 * What the Operation reconciler would do at the end: phase and finishedAt on the status subresource.
 * `finishedAt` (ms) defaults to the real time; tests on a FakeClock pass its now, so history order is theirs.
 */
export async function finishOperation(
  client: RestClient,
  ns: string,
  name: string,
  phase: string,
  finishedAt = Date.now(),
): Promise<void> {
  await client.request({
    method: 'PATCH',
    path: pathOf(OPERATION, ns, name, 'status'),
    body: { status: { phase, finishedAt: formatTime(finishedAt) } },
    contentType: PATCH_TYPES.merge,
  });
}

export async function mergePatch(client: RestClient, path: string, body: unknown): Promise<void> {
  await client.request({ method: 'PATCH', path, body, contentType: PATCH_TYPES.merge });
}

export interface EventItem {
  type?: string;
  reason?: string;
  note?: string;
  regarding?: { name?: string; kind?: string };
}

export async function eventsAbout(
  client: RestClient,
  ns: string,
  kind: string,
  name: string,
): Promise<EventItem[]> {
  const list = await client.request<{ items: EventItem[] }>({
    method: 'GET',
    path: resourcePath({ group: 'events.k8s.io', version: 'v1', plural: 'events', namespace: ns }),
  });
  return list.items.filter((e) => e.regarding?.kind === kind && e.regarding.name === name);
}

/** Passes requests through; `failStatusOf` makes status writes of that resource path fail (a crash). */
export class FaultyClient implements KubeClient {
  failStatusOf: string | undefined;
  readonly #inner: KubeClient;
  constructor(inner: KubeClient) {
    this.#inner = inner;
  }
  request<T>(req: KubeRequest): Promise<T> {
    if (
      this.failStatusOf &&
      req.method === 'PATCH' &&
      req.path.startsWith(this.failStatusOf) &&
      req.path.endsWith('/status')
    )
      return Promise.reject(new Error('injected: status write lost'));
    return this.#inner.request<T>(req);
  }
}

export interface Schedulers {
  metrics: RuntimeMetrics;
  stop(): Promise<void>;
}

/**
 * One operator process running the CronOperation and/or WatchOperation controllers on `clock` (leader
 * election off unless `leaderElection` is given, no ports). `client` is what the controllers write with (a FaultyClient to lose writes).
 * stop() may be called more than once.
 */
export function startSchedulers(
  kc: KubeConfig,
  clock: FakeClock,
  opts: {
    cron?: boolean;
    watch?: boolean;
    client?: KubeClient;
    leaderElection?: LeaderElectionOptions;
    /** Where velero.io Backups live for spec.retention (retention.test.ts). */
    veleroNamespace?: string;
  } = {},
): Schedulers {
  const raw = testClient(kc);
  const client = opts.client ?? raw;
  const metrics = new RuntimeMetrics();
  const manager = new Manager({
    // With leader election (a test's in-memory Lease), its timing runs on `clock` too.
    ...(opts.leaderElection ? { leaderElection: opts.leaderElection, clock } : { leaderElection: false }),
    metricsPort: false,
    probePort: false,
    metrics,
    logger: silentLogger,
    cache: new InformerFactory({ kc, client: raw }),
  });
  const deps = {
    client,
    mapper: new RestMapper(raw),
    events: new EventRecorder({ client: raw }),
    clock,
    ...(opts.veleroNamespace ? { veleroNamespace: opts.veleroNamespace } : {}),
  };
  if (opts.cron !== false) setupCronController(manager, deps);
  if (opts.watch) setupWatchController(manager, deps);
  const running = manager.start();
  let stopped: Promise<void> | undefined;
  return {
    metrics,
    stop() {
      stopped ??= manager.stop().then(() => running);
      return stopped;
    },
  };
}

// ---- object builders --------------------------------------------------------------------------------

const CHART = { sourceType: 'oci', url: 'oci://registry.example.com/charts', name: 'shop' } as const;

/** An ApplicationInstance of chart `version` (capability annotations `ops.vworkspace.io/<verb>: <engine>`). */
export function instanceObject(
  ns: string,
  name: string,
  opts: { labels?: Record<string, string>; version?: string; capabilities?: Record<string, string> } = {},
): ApplicationInstance {
  const annotations = Object.fromEntries(
    Object.entries(opts.capabilities ?? {}).map(([verb, engine]) => [`ops.vworkspace.io/${verb}`, engine]),
  );
  return {
    apiVersion: APPLICATION_INSTANCE.apiVersion,
    kind: APPLICATION_INSTANCE.kind,
    metadata: {
      name,
      namespace: ns,
      ...(opts.labels ? { labels: opts.labels } : {}),
      ...(opts.capabilities ? { annotations } : {}),
    },
    spec: {
      appRef: { catalogId: 'shop', chart: { ...CHART, version: opts.version ?? '1.0.0' } },
      release: { name },
    },
  } as ApplicationInstance;
}

/** A CronOperation running an hourly velero Backup of `shop` unless `spec` says otherwise. */
export function cronObject(
  ns: string,
  name: string,
  spec: Partial<CronOperationSpec> = {},
  annotations?: Record<string, string>,
): CronOperation {
  return {
    apiVersion: CRON_OPERATION.apiVersion,
    kind: CRON_OPERATION.kind,
    metadata: { name, namespace: ns, ...(annotations ? { annotations } : {}) },
    spec: {
      schedule: '0 * * * *',
      operationTemplate: { spec: { type: 'Backup', engine: 'velero', targetRef: { name: 'shop' } } },
      ...spec,
    },
  };
}

/** A WatchOperation of the `tier: prod` instances running a velero Backup; `spec` sets the triggers. */
export function watchObject(
  ns: string,
  name: string,
  spec: Partial<WatchOperationSpec> & Pick<WatchOperationSpec, 'triggers'>,
): WatchOperation {
  return {
    apiVersion: WATCH_OPERATION.apiVersion,
    kind: WATCH_OPERATION.kind,
    metadata: { name, namespace: ns },
    spec: {
      selector: { matchLabels: { tier: 'prod' } },
      operationTemplate: { spec: { type: 'Backup', engine: 'velero' } },
      ...spec,
    },
  };
}

/** POSTs an object built above to its namespace's collection. */
export async function create(
  client: RestClient,
  obj: ApplicationInstance | CronOperation | WatchOperation,
): Promise<void> {
  const kind = [APPLICATION_INSTANCE, CRON_OPERATION, WATCH_OPERATION].find((k) => k.kind === obj.kind);
  if (!kind) throw new Error(`no collection for ${obj.kind}`);
  await client.request({ method: 'POST', path: pathOf(kind, obj.metadata.namespace ?? ''), body: obj });
}

export function getObject<T>(client: RestClient, kind: ResourceId, ns: string, name: string): Promise<T> {
  return client.request<T>({ method: 'GET', path: pathOf(kind, ns, name) });
}

/**
 * Waits until the CronOperation plans a slot (after `after`, if given) and the controller has requeued for
 * exactly that instant on `clock` (the status write comes before the requeue), then moves the clock there.
 */
export async function advanceToNextSlot(
  client: RestClient,
  clock: FakeClock,
  ns: string,
  name: string,
  after?: number,
): Promise<number> {
  const next = await eventually('status.nextScheduleTime and its requeue', async () => {
    const t = (await getObject<CronOperation>(client, CRON_OPERATION, ns, name)).status?.nextScheduleTime;
    const ms = t ? Date.parse(t) : undefined;
    return ms !== undefined && (after === undefined || ms > after) && clock.hasTimerAt(ms) ? ms : undefined;
  });
  await clock.advance(next - clock.now());
  return next;
}
