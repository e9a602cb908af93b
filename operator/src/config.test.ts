import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.ts';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const r = loadConfig({ POD_NAMESPACE: 'vworkspace-system' });
    expect(r).toEqual({
      ok: true,
      config: {
        namespace: 'vworkspace-system',
        leaderElection: true,
        metricsPort: 8080,
        probePort: 8081,
        webhookPort: 9443,
        webhookCertDir: '/tmp/k8s-webhook-server/serving-certs',
        logLevel: 'info',
        veleroNamespace: 'velero',
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
      WEBHOOK_CERT_DIR: '/certs',
      LOG_LEVEL: 'debug',
      RELATED_IMAGE_HELM: 'registry.example/helm@sha256:abc',
      VELERO_NAMESPACE: 'backup-system',
    });
    expect(r.ok && r.config).toMatchObject({
      namespace: 'ops',
      leaderElection: false,
      metricsPort: 0,
      probePort: 18081,
      webhookPort: 19443,
      webhookCertDir: '/certs',
      logLevel: 'debug',
      helmImage: 'registry.example/helm@sha256:abc',
      veleroNamespace: 'backup-system',
    });
  });

  it('reports every problem at once, naming the variable', () => {
    const r = loadConfig({ METRICS_PORT: 'eighty', LEADER_ELECT: 'yes', LOG_LEVEL: 'loud' });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toHaveLength(4);
    expect(r.problems.join('\n')).toMatch(/OPERATOR_NAMESPACE/);
    expect(r.problems.join('\n')).toMatch(/METRICS_PORT="eighty" is not a port number/);
    expect(r.problems.join('\n')).toMatch(/LEADER_ELECT="yes" must be true or false/);
    expect(r.problems.join('\n')).toMatch(/LOG_LEVEL="loud"/);
  });
});
