// vworkspace-operator entry point: `node operator/src/main.ts` (Node 24).
//
// The thin shell: settings from the environment (config.ts), a kubeconfig (KUBECONFIG or the
// in-cluster ServiceAccount), one Manager that owns informers, controllers (leader only), the
// admission webhook (every replica), metrics on :8080 and probes on :8081 (each address settable:
// METRICS_HOST, PROBE_HOST, WEBHOOK_HOST), and graceful shutdown
// on SIGTERM. Everything it runs is built by `buildOperator`, which tests call in-process.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { createAdmissionHandlers, operatorIdentity } from './admission/handlers.ts';
import { startWebhookServer } from './admission/server.ts';
import { CatalogStore, createCatalogInformer } from './catalog/store.ts';
import { loadConfig, type OperatorConfig } from './config.ts';
import { adapterFor } from './engines/index.ts';
import { createInstanceController } from './instance/controller.ts';
import { createOperationController } from './operation/controller.ts';
import {
  createLogger,
  EventRecorder,
  type Logger,
  Manager,
  ObjectWriter,
  RestClient,
  RestMapper,
  RuntimeMetrics,
} from './runtime/index.ts';
import { createCronController } from './schedule/cron-controller.ts';
import { createWatchController } from './schedule/watch-controller.ts';

export interface OperatorDeps {
  config: OperatorConfig;
  kc: KubeConfig;
  log: Logger;
}

/** Everything one operator process runs, wired but not started. */
export function buildOperator({ config, kc, log }: OperatorDeps): Manager {
  const client = new RestClient(kc);
  const metrics = new RuntimeMetrics();
  const manager = new Manager({
    client,
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
  });
  const mapper = new RestMapper(client);
  const writer = new ObjectWriter(client, mapper);
  const events = new EventRecorder({ client, logger: log });
  // The catalog (templates) is read by the webhook on every replica and by the reconcilers.
  const catalog = new CatalogStore({
    informer: createCatalogInformer(kc, config.namespace, { client, logger: log }),
    events,
    registry: metrics.registry,
    logger: log,
  });
  manager.addInformer(catalog.informer);
  // Controllers register here, each with its informers: manager.addInformer(i); manager.addController(c).
  // WATCH_NAMESPACE (the install mode): informers list and watch only there, the webhook admits only there.
  const namespaces = config.watchNamespaces;
  const instances = createInstanceController({
    kc,
    client,
    writer,
    events,
    logger: log,
    metrics,
    catalog,
    namespaces,
  });
  for (const i of instances.informers) manager.addInformer(i);
  manager.addController(instances.controller);
  const operations = createOperationController({
    kc,
    client,
    writer,
    mapper,
    events,
    logger: log,
    metrics,
    adapterFor,
    templates: catalog,
    veleroNamespace: config.veleroNamespace,
    namespaces,
    ...(config.helmImage ? { helmImage: config.helmImage } : {}),
  });
  for (const i of operations.informers) manager.addInformer(i);
  manager.addController(operations.controller);
  manager.add(operations.runnable);
  for (const scheduler of [
    createCronController({ kc, client, writer, events, logger: log, metrics, namespaces }),
    createWatchController({ kc, client, writer, events, logger: log, metrics, namespaces }),
  ]) {
    for (const i of scheduler.informers) manager.addInformer(i);
    manager.addController(scheduler.controller);
  }

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
            client,
            templates: catalog,
            self: operatorIdentity(client),
            watchNamespaces: namespaces,
          }),
          log,
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
  const kc = new KubeConfig();
  kc.loadFromDefault();
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
  } catch (err) {
    log.fatal({ err }, 'operator stopped with an error');
    process.exit(1);
  }
}

if (import.meta.main) await main();
