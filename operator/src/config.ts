// The operator's settings, from the environment (the CSV's Deployment sets them). Pure: a
// function of an env map, returning either a config or every problem at once.

import { isIP } from 'node:net';
import { DEFAULT_BURST } from '@vworkspace/runtime';
import { DEFAULT_ACCESS_CACHE_SECONDS } from './admission/access-cache.ts';
import { parsePositiveDuration } from './time/duration.ts';

export interface OperatorConfig {
  /** Namespace of the operator: the leader-election Lease and the catalog ConfigMaps live here. */
  namespace: string;
  /**
   * The namespaces whose instances, Operations and schedules it runs (WATCH_NAMESPACE, OLM's
   * olm.targetNamespaces, comma-separated); empty: every namespace (OLM's AllNamespaces install).
   */
  watchNamespaces: string[];
  leaderElection: boolean;
  /** Leader-election timing (controller-runtime's defaults: 15s, 10s, 2s). */
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  metricsPort: number;
  probePort: number;
  webhookPort: number;
  /** Addresses the servers listen on (METRICS_HOST, PROBE_HOST, WEBHOOK_HOST); unset: every interface. */
  metricsHost?: string;
  probeHost?: string;
  webhookHost?: string;
  /** Directory with tls.crt/tls.key; the webhook is served when it exists. */
  webhookCertDir: string;
  logLevel: string;
  /** Seconds the webhook keeps a SubjectAccessReview that allowed (ADMISSION_ACCESS_CACHE_SECONDS; 0: none). */
  admissionAccessCacheSeconds: number;
  /**
   * Run only Operations whose signed admission record verifies (REQUIRE_ADMISSION_STAMP, default true;
   * docs/adr/0029-signed-admission-stamps.md). false only for a development run without webhooks.
   */
  requireAdmissionStamp: boolean;
  /** The helm CLI image (RELATED_IMAGE_HELM), used by the helm engine's runner Jobs. */
  helmImage?: string;
  /** Namespace where Velero runs and its Backup/Restore objects live. */
  veleroNamespace: string;
  /** Client-side rate limit of each API client (one per controller), client-go's QPS/burst; 0 (default) = none. */
  kubeApiQps: number;
  kubeApiBurst: number;
  /** Concurrent reconciles per controller (controller-runtime MaxConcurrentReconciles). */
  workers: Record<ControllerName, number>;
}

export const CONTROLLER_NAMES = [
  'operation',
  'cronoperation',
  'watchoperation',
  'applicationinstance',
] as const;
export type ControllerName = (typeof CONTROLLER_NAMES)[number];

/** Workers per controller: kube-controller-manager's --concurrent-job-syncs / --concurrent-cron-job-syncs. */
export const DEFAULT_WORKERS = 5;
/**
 * No client-side QPS limit by default: the API server's priority and fairness protects it, as
 * controller-runtime ≥ 0.21 defaults (docs/adr/0023-no-client-side-rate-limit-by-default.md): a
 * per-controller budget caps how many objects a second a controller handles, whatever the CPU
 * (measured: docs/performance.md, "The figures behind choices in the code").
 */
export const OPERATOR_DEFAULT_QPS = 0;
/** Variable that sets a controller's workers, e.g. CRONOPERATION_WORKERS. */
export const workersVariable = (c: ControllerName): string => `${c.toUpperCase()}_WORKERS`;

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
/** A namespace name: an RFC 1123 label. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function loadConfig(
  env: Record<string, string | undefined>,
): { ok: true; config: OperatorConfig } | { ok: false; problems: string[] } {
  const problems: string[] = [];
  const port = (name: string, dflt: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return dflt;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0 || n > 65535) {
      problems.push(`${name}=${JSON.stringify(raw)} is not a port number (0-65535)`);
      return dflt;
    }
    return n;
  };
  const bool = (name: string, dflt: boolean): boolean => {
    const raw = env[name]?.toLowerCase();
    if (raw === undefined || raw === '') return dflt;
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    problems.push(`${name}=${JSON.stringify(env[name])} must be true or false`);
    return dflt;
  };
  const duration = (name: string, dflt: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return dflt;
    const d = parsePositiveDuration(raw);
    if (!d.ok) {
      problems.push(`${name}: ${d.message}`);
      return dflt;
    }
    return d.ms;
  };
  const number = (
    name: string,
    dflt: number,
    range: { min: number; max: number; integer: boolean; zero?: string },
  ): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return dflt;
    const n = Number(raw);
    const { min, max, integer, zero } = range;
    if (!Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
      const what = `${integer ? 'a whole number' : 'a number'} from ${min}${min === 0 && zero ? ` (${zero})` : ''} to ${max}`;
      problems.push(`${name}=${JSON.stringify(raw)} must be ${what}`);
      return dflt;
    }
    return n;
  };
  const namespace = env.OPERATOR_NAMESPACE || env.POD_NAMESPACE || '';
  if (!namespace)
    problems.push(
      'OPERATOR_NAMESPACE (or POD_NAMESPACE from the downward API) must name the operator namespace',
    );
  const watchNamespaces = [
    ...new Set(
      (env.WATCH_NAMESPACE ?? '')
        .split(',')
        .map((n) => n.trim())
        .filter(Boolean),
    ),
  ];
  for (const n of watchNamespaces)
    if (!DNS_LABEL.test(n))
      problems.push(
        `WATCH_NAMESPACE: ${JSON.stringify(n)} is not a namespace name (comma-separated names; empty: every namespace)`,
      );
  const host = (name: string): string | undefined => {
    const raw = env[name] || undefined;
    if (raw !== undefined && isIP(raw) === 0)
      problems.push(`${name}=${JSON.stringify(raw)} must be an IP address (unset: every interface)`);
    return raw;
  };
  const metricsHost = host('METRICS_HOST');
  const probeHost = host('PROBE_HOST');
  const webhookHost = host('WEBHOOK_HOST');
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LEVELS.includes(logLevel))
    problems.push(`LOG_LEVEL=${JSON.stringify(logLevel)} must be one of ${LEVELS.join(', ')}`);
  const leaseDurationMs = duration('LEASE_DURATION', 15_000);
  const renewDeadlineMs = duration('RENEW_DEADLINE', 10_000);
  const retryPeriodMs = duration('RETRY_PERIOD', 2_000);
  // The same ordering client-go's leader election insists on.
  if (!(leaseDurationMs > renewDeadlineMs && renewDeadlineMs > retryPeriodMs))
    problems.push(
      `LEASE_DURATION (${leaseDurationMs} ms) must be greater than RENEW_DEADLINE (${renewDeadlineMs} ms), which must be greater than RETRY_PERIOD (${retryPeriodMs} ms)`,
    );
  const workers = Object.fromEntries(
    CONTROLLER_NAMES.map((c) => [
      c,
      number(workersVariable(c), DEFAULT_WORKERS, { min: 1, max: 1000, integer: true }),
    ]),
  ) as Record<ControllerName, number>;
  const config: OperatorConfig = {
    namespace,
    watchNamespaces,
    leaderElection: bool('LEADER_ELECT', true),
    requireAdmissionStamp: bool('REQUIRE_ADMISSION_STAMP', true),
    leaseDurationMs,
    renewDeadlineMs,
    retryPeriodMs,
    metricsPort: port('METRICS_PORT', 8080),
    probePort: port('PROBE_PORT', 8081),
    webhookPort: port('WEBHOOK_PORT', 9443),
    ...(metricsHost ? { metricsHost } : {}),
    ...(probeHost ? { probeHost } : {}),
    ...(webhookHost ? { webhookHost } : {}),
    webhookCertDir: env.WEBHOOK_CERT_DIR || '/tmp/k8s-webhook-server/serving-certs',
    logLevel,
    veleroNamespace: env.VELERO_NAMESPACE || 'velero',
    kubeApiQps: number('KUBE_API_QPS', OPERATOR_DEFAULT_QPS, {
      min: 0,
      max: 100_000,
      integer: false,
      zero: 'no client-side limit',
    }),
    kubeApiBurst: number('KUBE_API_BURST', DEFAULT_BURST, { min: 1, max: 100_000, integer: true }),
    workers,
    admissionAccessCacheSeconds: number('ADMISSION_ACCESS_CACHE_SECONDS', DEFAULT_ACCESS_CACHE_SECONDS, {
      min: 0,
      max: 300,
      integer: true,
      zero: 'none kept',
    }),
    ...(env.RELATED_IMAGE_HELM ? { helmImage: env.RELATED_IMAGE_HELM } : {}),
  };
  return problems.length > 0 ? { ok: false, problems } : { ok: true, config };
}
