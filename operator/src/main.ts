// vworkspace-operator entry point: `node operator/src/main.ts` (Node 24).
//
// The thin shell: settings from the environment (config.ts), a kubeconfig (KUBECONFIG or the
// in-cluster ServiceAccount), one Manager that owns informers, controllers (leader only), the
// admission webhook (every replica), metrics on :8080 and probes on :8081 (each address settable:
// METRICS_HOST, PROBE_HOST, WEBHOOK_HOST), and graceful shutdown
// on SIGTERM. Everything it runs is built by `buildOperator`, which tests call in-process.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  Activity,
  createLogger,
  EventLoopMonitor,
  EventRecorder,
  InformerFactory,
  type KubeConfigLike,
  type Logger,
  loadKubeConfig,
  Manager,
  ObjectWriter,
  RestClient,
  RestMapper,
  RuntimeMetrics,
  realClock,
  scopedTo,
} from '@vworkspace/runtime';
import { AccessCache } from './admission/access-cache.ts';
import { createAdmissionHandlers, operatorIdentity } from './admission/handlers.ts';
import { startWebhookServer } from './admission/server.ts';
import { APPLICATION_INSTANCE } from './api/constants.ts';
import { CatalogStore, createCatalogInformer } from './catalog/store.ts';
import { type ControllerName, loadConfig, type OperatorConfig } from './config.ts';
import { adapterFor } from './engines/index.ts';
import { SigningKeys } from './identity/signing-key.ts';
import { setupInstanceController } from './instance/controller.ts';
import { setupOperationController } from './operation/controller.ts';
import { setupCronController } from './schedule/cron-controller.ts';
import { setupWatchController } from './schedule/watch-controller.ts';

export interface OperatorDeps {
  config: OperatorConfig;
  kc: KubeConfigLike;
  log: Logger;
}

/** A lull in the Operation controllers' work: this long without a key queued or reconciled. */
export const BOOKKEEPING_QUIET_MS = 1_000;
/** The longest an instance's summary or an Event waits for that lull (the staleness under sustained load). */
export const BOOKKEEPING_MAX_TRAIL_MS = 30_000;
/**
 * Background Event writes that may wait at once (client-go keeps 1,000). A burst's Events trail it only
 * while fewer than half this many wait (runtime events.ts), and a burst records about 1.4 Events per
 * Operation: this lets the Events of a 2,000-Operation burst all trail it, where 1,000 made most of them
 * go out during the burst (ADR 0062). Each waiting write holds under 1 KiB (bench/events-memory.ts,
 * docs/performance.md).
 */
export const EVENT_BACKLOG_LIMIT = 10_000;

/** Everything one operator process runs, wired but not started. */
export function buildOperator({ config, kc, log }: OperatorDeps): Manager {
  const metrics = new RuntimeMetrics(undefined, { processMetrics: true });
  // One API client per controller, as kube-controller-manager does: each has its own connection pool
  // and its own QPS/burst budget, so one busy controller cannot starve another's writes.
  const clientFor = (name: string, qps = config.kubeApiQps) =>
    new RestClient(kc, { qps, burst: config.kubeApiBurst, metrics: metrics.restClientMetrics(name) });
  // WATCH_NAMESPACE (the install mode): informers list and watch only there, the webhook admits only there.
  const namespaces = config.watchNamespaces;
  // List/watch for every informer and discovery; informers are shared between controllers.
  const shared = clientFor('informers');
  const mapper = new RestMapper(shared);
  const informers = new InformerFactory({ kc, client: shared, logger: log, namespaces });
  const manager = new Manager({
    cache: informers,
    // The Lease has a client of its own: renewals never queue behind a controller's requests.
    client: clientFor('leader-election'),
    leaderElection: config.leaderElection
      ? {
          namespace: config.namespace,
          leaseDurationMs: config.leaseDurationMs,
          renewDeadlineMs: config.renewDeadlineMs,
          retryPeriodMs: config.retryPeriodMs,
        }
      : false,
    metricsPort: config.metricsPort,
    probePort: config.probePort,
    ...(config.metricsHost ? { metricsHost: config.metricsHost } : {}),
    ...(config.probeHost ? { probeHost: config.probeHost } : {}),
    logger: log,
    metrics,
    eventLoop: new EventLoopMonitor({ logger: log }),
  });
  // What users wait for (Operations, their children and status) goes first; what reports on it (the
  // instances' summaries, Events) trails a burst of that work, at most BOOKKEEPING_MAX_TRAIL_MS
  // (docs/adr/0062-bookkeeping-trails-a-burst.md).
  const activity = new Activity({ quietMs: BOOKKEEPING_QUIET_MS });
  const trail = { activity, maxMs: BOOKKEEPING_MAX_TRAIL_MS };
  const controllerDeps = (name: ControllerName) => {
    const client = clientFor(name);
    return {
      kc,
      client,
      mapper,
      writer: new ObjectWriter(client, mapper),
      // Events are written behind the reconcile on a client of their own: best effort, as in client-go,
      // and never spending the budget the controller's own writes need.
      events: new EventRecorder({
        client: clientFor(`${name}-events`),
        logger: log,
        background: true,
        maxPending: EVENT_BACKLOG_LIMIT,
        trail,
      }),
      logger: log,
      metrics,
      informers,
      workers: config.workers[name],
      namespaces,
    };
  };
  // The catalog (templates) is read by the webhook on every replica and by the reconcilers.
  const catalog = new CatalogStore({
    informer: createCatalogInformer(kc, config.namespace, { client: shared, logger: log }),
    events: new EventRecorder({ client: clientFor('catalog'), logger: log }),
    registry: metrics.registry,
    logger: log,
  });
  manager.addInformer(catalog.informer);
  setupInstanceController(manager, { ...controllerDeps('applicationinstance'), catalog, trail });
  // The admission record's key, from the webhook's serving key (every replica mounts it): the webhook
  // signs with it, the reconciler verifies (docs/adr/0029-signed-admission-stamps.md).
  const signingKeys = new SigningKeys(config.webhookCertDir);
  // Who the operator is: the webhook trusts its Operations for schedulers, the reconciler too.
  const self = operatorIdentity(clientFor('identity', 0));
  setupOperationController(manager, {
    ...controllerDeps('operation'),
    activity,
    ...(config.requireAdmissionStamp ? { admission: { keys: signingKeys, self } } : {}),
    mapper,
    adapterFor,
    templates: catalog,
    veleroNamespace: config.veleroNamespace,
    ...(config.helmImage ? { helmImage: config.helmImage } : {}),
  });
  setupCronController(manager, {
    ...controllerDeps('cronoperation'),
    activity,
    veleroNamespace: config.veleroNamespace,
  });
  setupWatchController(manager, { ...controllerDeps('watchoperation'), activity });
  // The webhook reads targets from the same shared ApplicationInstance informer the controllers use.
  const instanceCache = informers.informer(
    {
      group: APPLICATION_INSTANCE.group,
      version: APPLICATION_INSTANCE.version,
      plural: APPLICATION_INSTANCE.plural,
    },
    scopedTo(namespaces),
  );
  // Started on every replica; readiness waits for their first sync. Shared ones are added once.
  for (const i of informers.informers) manager.addInformer(i);
  // Admission answers for the API server, whose own request rate (and priority and fairness)
  // already bounds it: a client-side budget would only add queueing to every create.
  const admissionClient = clientFor('admission-webhook', 0);

  // The webhook serves on every replica; without certificates (a local run) it is left out.
  if (existsSync(join(config.webhookCertDir, 'tls.crt'))) {
    manager.add({
      name: 'admission-webhook',
      needLeaderElection: false,
      async start(signal) {
        const server = await startWebhookServer({
          port: config.webhookPort,
          ...(config.webhookHost ? { host: config.webhookHost } : {}),
          certDir: config.webhookCertDir,
          handlers: createAdmissionHandlers({
            client: admissionClient,
            instances: instanceCache,
            accessCache: new AccessCache(config.admissionAccessCacheSeconds, realClock),
            templates: catalog,
            self,
            watchNamespaces: namespaces,
            signingKeys,
            veleroNamespace: config.veleroNamespace,
          }),
          log,
          observe: (path, code, seconds) => metrics.observeWebhook(path, code, seconds),
        });
        log.info({ port: server.port }, 'admission webhook serving');
        await new Promise<void>((ok) => signal.addEventListener('abort', () => ok(), { once: true }));
        await server.close();
      },
    });
  } else {
    log.warn({ certDir: config.webhookCertDir }, 'no webhook certificate: admission webhook not served');
  }
  return manager;
}

async function main(): Promise<void> {
  const loaded = loadConfig(process.env);
  if (!loaded.ok) {
    process.stderr.write(`vworkspace-operator: invalid settings:\n  ${loaded.problems.join('\n  ')}\n`);
    process.exit(2);
  }
  const log = createLogger({ level: loaded.config.logLevel });
  const kc = await loadKubeConfig();
  const manager = buildOperator({ config: loaded.config, kc, log });
  manager.installSignalHandlers();
  log.info(
    {
      namespace: loaded.config.namespace,
      watchNamespaces: loaded.config.watchNamespaces.length ? loaded.config.watchNamespaces : 'all',
      leaderElection: loaded.config.leaderElection,
    },
    'starting',
  );
  try {
    await manager.start();
    log.info('stopped');
    // Everything has stopped; idle keep-alive connections and library timers must not keep the
    // process (and the pod's termination) waiting for the kubelet's SIGKILL.
    process.exit(0);
  } catch (err) {
    log.fatal({ err }, 'operator stopped with an error');
    process.exit(1);
  }
}

if (import.meta.main) await main();
