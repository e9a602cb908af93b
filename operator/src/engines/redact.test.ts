import { describe, expect, it } from 'vitest';
import { REDACTED, redactSecretSourced } from './redact.ts';

describe('redactSecretSourced', () => {
  const job = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: 'migrate-abc',
      namespace: 'team-a',
      labels: { 'ops.vworkspace.io/operation': 'migrate', 'app.kubernetes.io/instance': 'shop' },
      annotations: { 'ops.vworkspace.io/helm-hook': 'shop-migrate', 'checksum/secret': 'abc123' },
    },
    spec: {
      backoffLimit: 0,
      template: {
        spec: {
          serviceAccountName: 'vworkspace-runner',
          automountServiceAccountToken: false,
          securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'migrate',
              image: 'app:1',
              command: ['sh', '-c', 'psql postgres://admin:hunter2@db/app'],
              args: ['--password=hunter2'],
              env: [
                { name: 'PASSWORD', value: 'hunter2' },
                { name: 'FROM_SECRET', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } },
              ],
              resources: { limits: { memory: '128Mi' } },
              volumeMounts: [{ name: 'data', mountPath: '/data' }],
            },
          ],
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'shop-data' } }],
        },
      },
    },
  };

  it("replaces every value given to the chart, wherever it is, and keeps the manifest's shape", () => {
    const r = redactSecretSourced(job);
    expect(JSON.stringify(r)).not.toContain('hunter2');
    expect(JSON.stringify(r)).not.toContain('abc123');
    const c = r.spec.template.spec.containers[0]!;
    expect(c.command).toEqual([REDACTED, REDACTED, REDACTED]);
    expect(c.env).toEqual([
      { name: 'PASSWORD', value: REDACTED },
      { name: 'FROM_SECRET', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } },
    ]);
    expect(c).toMatchObject({ name: 'migrate', image: 'app:1', resources: { limits: { memory: '128Mi' } } });
    expect(r.spec.template.spec).toMatchObject({
      serviceAccountName: 'vworkspace-runner',
      automountServiceAccountToken: false,
      securityContext: job.spec.template.spec.securityContext,
      volumes: job.spec.template.spec.volumes,
    });
    expect(r.metadata).toEqual({
      name: 'migrate-abc',
      namespace: 'team-a',
      labels: { 'ops.vworkspace.io/operation': 'migrate', 'app.kubernetes.io/instance': REDACTED },
      annotations: { 'ops.vworkspace.io/helm-hook': 'shop-migrate', 'checksum/secret': REDACTED },
    });
  });

  it('leaves the manifest it was given alone', () => {
    const before = structuredClone(job);
    redactSecretSourced(job);
    expect(job).toEqual(before);
  });
});
