import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.ts';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const r = loadConfig({ POD_NAMESPACE: 'vworkspace-system' });
    expect(r).toEqual({
      ok: true,
      config: {
        namespace: 'vworkspace-system',
        watchNamespaces: [],
        leaderElection: true,
        requireAdmissionStamp: true,
        leaseDurationMs: 15_000,
        renewDeadlineMs: 10_000,
        retryPeriodMs: 2_000,
        metricsPort: 8080,
        probePort: 8081,
        webhookPort: 9443,
        webhookCertDir: '/tmp/k8s-webhook-server/serving-certs',
        logLevel: 'info',
        veleroNamespace: 'velero',
        kubeApiQps: 0,
        kubeApiBurst: 30,
        workers: { operation: 5, cronoperation: 5, watchoperation: 5, applicationinstance: 5 },
        admissionAccessCacheSeconds: 10,
      },
    });
  });

  it('prefers OPERATOR_NAMESPACE and reads every setting', () => {
    const r = loadConfig({
      OPERATOR_NAMESPACE: 'ops',
      POD_NAMESPACE: 'other',
      LEADER_ELECT: 'false',
      METRICS_PORT: '0',
      PROBE_PORT: '18081',
      WEBHOOK_PORT: '19443',
      WEBHOOK_HOST: '127.0.0.2',
      METRICS_HOST: '127.0.0.3',
      PROBE_HOST: '::1',
      WEBHOOK_CERT_DIR: '/certs',
      LOG_LEVEL: 'debug',
      RELATED_IMAGE_HELM: 'registry.example/helm@sha256:abc',
      VELERO_NAMESPACE: 'backup-system',
      LEASE_DURATION: '6s',
      RENEW_DEADLINE: '4s',
      RETRY_PERIOD: '500ms',
      KUBE_API_QPS: '20',
      KUBE_API_BURST: '1',
      OPERATION_WORKERS: '8',
      CRONOPERATION_WORKERS: '16',
      WATCHOPERATION_WORKERS: '1',
      APPLICATIONINSTANCE_WORKERS: '2',
      ADMISSION_ACCESS_CACHE_SECONDS: '0',
    });
    expect(r.ok && r.config).toMatchObject({
      kubeApiQps: 20,
      kubeApiBurst: 1,
      workers: { operation: 8, cronoperation: 16, watchoperation: 1, applicationinstance: 2 },
      leaseDurationMs: 6_000,
      renewDeadlineMs: 4_000,
      retryPeriodMs: 500,
      namespace: 'ops',
      leaderElection: false,
      metricsPort: 0,
      probePort: 18081,
      webhookPort: 19443,
      webhookHost: '127.0.0.2',
      metricsHost: '127.0.0.3',
      probeHost: '::1',
      webhookCertDir: '/certs',
      logLevel: 'debug',
      helmImage: 'registry.example/helm@sha256:abc',
      veleroNamespace: 'backup-system',
      admissionAccessCacheSeconds: 0,
    });
  });

  it('reads the install mode from WATCH_NAMESPACE (OLM olm.targetNamespaces): a list, or empty for all', () => {
    const watch = (v: string) => {
      const r = loadConfig({ POD_NAMESPACE: 'ops', WATCH_NAMESPACE: v });
      return r.ok ? r.config.watchNamespaces : r.problems;
    };
    expect(watch('')).toEqual([]);
    expect(watch('ops')).toEqual(['ops']);
    expect(watch(' team-a, team-b,team-a,')).toEqual(['team-a', 'team-b']);
    expect(watch('team-a,Team_B')).toEqual([
      'WATCH_NAMESPACE: "Team_B" is not a namespace name (comma-separated names; empty: every namespace)',
    ]);
  });

  it('reports every problem at once, naming the variable', () => {
    const r = loadConfig({
      METRICS_PORT: 'eighty',
      LEADER_ELECT: 'yes',
      LOG_LEVEL: 'loud',
      WEBHOOK_HOST: 'pod.local',
      METRICS_HOST: 'localhost',
    });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toHaveLength(6);
    expect(r.problems.join('\n')).toMatch(/METRICS_HOST="localhost" must be an IP address/);
    expect(r.problems.join('\n')).toMatch(/OPERATOR_NAMESPACE/);
    expect(r.problems.join('\n')).toMatch(/METRICS_PORT="eighty" is not a port number/);
    expect(r.problems.join('\n')).toMatch(/LEADER_ELECT="yes" must be true or false/);
    expect(r.problems.join('\n')).toMatch(/LOG_LEVEL="loud"/);
    expect(r.problems.join('\n')).toMatch(/WEBHOOK_HOST="pod.local" must be an IP address/);
  });

  it('rejects workers and client rate limits out of range, naming the variable and the range', () => {
    const r = loadConfig({
      POD_NAMESPACE: 'ops',
      OPERATION_WORKERS: '0',
      CRONOPERATION_WORKERS: '2.5',
      KUBE_API_QPS: '-1',
      KUBE_API_BURST: 'lots',
      ADMISSION_ACCESS_CACHE_SECONDS: '600',
    });
    expect(!r.ok && r.problems).toEqual([
      'OPERATION_WORKERS="0" must be a whole number from 1 to 1000',
      'CRONOPERATION_WORKERS="2.5" must be a whole number from 1 to 1000',
      'KUBE_API_QPS="-1" must be a number from 0 (no client-side limit) to 100000',
      'KUBE_API_BURST="lots" must be a whole number from 1 to 100000',
      'ADMISSION_ACCESS_CACHE_SECONDS="600" must be a whole number from 0 (none kept) to 300',
    ]);
  });

  it('rejects leader-election timings that are not durations or not ordered', () => {
    const bad = loadConfig({ POD_NAMESPACE: 'ops', LEASE_DURATION: '15' });
    expect(!bad.ok && bad.problems).toEqual([
      expect.stringMatching(/^LEASE_DURATION: invalid duration "15": missing unit/),
    ]);
    const unordered = loadConfig({ POD_NAMESPACE: 'ops', LEASE_DURATION: '5s', RENEW_DEADLINE: '10s' });
    expect(!unordered.ok && unordered.problems).toEqual([
      expect.stringMatching(/LEASE_DURATION \(5000 ms\) must be greater than RENEW_DEADLINE \(10000 ms\)/),
    ]);
  });
});
