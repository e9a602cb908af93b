import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isRecord } from './object.ts';
import { podPlacementProblems, podSecurityProblems, sanitizeUntrustedPodTemplate } from './pod-security.ts';

/** A pod template whose spec and first container get `pod` / `container` merged in. */
function template(pod: Record<string, unknown> = {}, container: Record<string, unknown> = {}) {
  return {
    metadata: { labels: { app: 'migrate' } },
    spec: { containers: [{ name: 'main', image: 'app:1', ...container }], ...pod },
  };
}

const fields = (t: unknown) => podSecurityProblems(t).map((p) => p.field);

describe('podSecurityProblems', () => {
  it('finds nothing in a plain template', () => {
    expect(fields(template())).toEqual([]);
  });

  it.each([
    [{ hostNetwork: true }, {}, 'spec.template.spec.hostNetwork'],
    [{ hostPID: true }, {}, 'spec.template.spec.hostPID'],
    [{ hostIPC: true }, {}, 'spec.template.spec.hostIPC'],
    [{ securityContext: { runAsUser: 0 } }, {}, 'spec.template.spec.securityContext.runAsUser'],
    [{ securityContext: { runAsNonRoot: false } }, {}, 'spec.template.spec.securityContext.runAsNonRoot'],
    [
      { securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '1' }] } },
      {},
      'spec.template.spec.securityContext.sysctls',
    ],
    [
      { securityContext: { seccompProfile: { type: 'Unconfined' } } },
      {},
      'spec.template.spec.securityContext.seccompProfile.type',
    ],
    [{ volumes: [{ name: 'root', hostPath: { path: '/' } }] }, {}, 'spec.template.spec.volumes[0].hostPath'],
    [{ volumes: [{ name: 'n', nfs: { server: 'x', path: '/' } }] }, {}, 'spec.template.spec.volumes[0].nfs'],
    [
      {},
      { securityContext: { privileged: true } },
      'spec.template.spec.containers[0].securityContext.privileged',
    ],
    [
      {},
      { securityContext: { capabilities: { add: ['SYS_ADMIN'] } } },
      'spec.template.spec.containers[0].securityContext.capabilities.add',
    ],
    [
      {},
      { securityContext: { allowPrivilegeEscalation: true } },
      'spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation',
    ],
    [{}, { securityContext: { runAsUser: 0 } }, 'spec.template.spec.containers[0].securityContext.runAsUser'],
    [
      {},
      { securityContext: { procMount: 'Unmasked' } },
      'spec.template.spec.containers[0].securityContext.procMount',
    ],
    [
      {},
      { securityContext: { seLinuxOptions: { type: 'spc_t' } } },
      'spec.template.spec.containers[0].securityContext.seLinuxOptions.type',
    ],
    [
      {},
      { ports: [{ containerPort: 80, hostPort: 80 }] },
      'spec.template.spec.containers[0].ports[0].hostPort',
    ],
    [
      { initContainers: [{ name: 'i', securityContext: { privileged: true } }] },
      {},
      'spec.template.spec.initContainers[0].securityContext.privileged',
    ],
  ])('refuses %j / container %j at %s', (pod, container, field) => {
    expect(fields(template(pod, container))).toEqual([field]);
  });

  it('refuses an unconfined AppArmor annotation on the pod template', () => {
    const t = {
      ...template(),
      metadata: { annotations: { 'container.apparmor.security.beta.kubernetes.io/main': 'unconfined' } },
    };
    expect(fields(t)).toEqual([
      'spec.template.metadata.annotations[container.apparmor.security.beta.kubernetes.io/main]',
    ]);
  });

  it('allows the volumes of the restricted standard', () => {
    const volumes = [
      'configMap',
      'secret',
      'emptyDir',
      'persistentVolumeClaim',
      'projected',
      'downwardAPI',
    ].map((k, i) => ({ name: `v${i}`, [k]: {} }));
    expect(fields(template({ volumes }))).toEqual([]);
  });
});

describe('sanitizeUntrustedPodTemplate', () => {
  it('forces the restricted settings and keeps a Localhost seccomp profile', () => {
    const r = sanitizeUntrustedPodTemplate(
      template({ securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'p.json' } } }),
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.template.spec).toMatchObject({
      hostNetwork: false,
      hostPID: false,
      hostIPC: false,
      securityContext: {
        runAsNonRoot: true,
        seccompProfile: { type: 'Localhost', localhostProfile: 'p.json' },
      },
      containers: [
        {
          securityContext: {
            privileged: false,
            allowPrivilegeEscalation: false,
            capabilities: { drop: ['ALL'] },
            readOnlyRootFilesystem: true,
          },
        },
      ],
    });
  });

  // Whatever a hostile template holds, the result is refused or runs within the restricted standard.
  const hostileContainer = fc.record(
    {
      name: fc.constant('c'),
      securityContext: fc.record(
        {
          privileged: fc.boolean(),
          allowPrivilegeEscalation: fc.boolean(),
          runAsUser: fc.constantFrom(0, 1000),
          capabilities: fc.record({
            add: fc.array(fc.constantFrom('SYS_ADMIN', 'NET_RAW'), { maxLength: 2 }),
          }),
        },
        { requiredKeys: [] },
      ),
      ports: fc.array(fc.record({ containerPort: fc.constant(80), hostPort: fc.constantFrom(0, 80) }), {
        maxLength: 1,
      }),
    },
    { requiredKeys: ['name'] },
  );
  const hostileTemplate = fc.record({
    spec: fc.record(
      {
        hostNetwork: fc.boolean(),
        hostPID: fc.boolean(),
        securityContext: fc.record(
          { runAsNonRoot: fc.boolean(), runAsUser: fc.constantFrom(0, 33) },
          { requiredKeys: [] },
        ),
        volumes: fc.array(
          fc.constantFrom({ name: 'a', emptyDir: {} }, { name: 'b', hostPath: { path: '/' } }),
          { maxLength: 2 },
        ),
        containers: fc.array(hostileContainer, { minLength: 1, maxLength: 2 }),
        initContainers: fc.array(hostileContainer, { maxLength: 1 }),
      },
      { requiredKeys: ['containers'] },
    ),
  });

  it('never lets privilege through (property)', () => {
    fc.assert(
      fc.property(hostileTemplate, (t) => {
        const r = sanitizeUntrustedPodTemplate(t);
        if (!r.ok) return r.problems.length > 0;
        const spec = r.template.spec;
        const containers = [...(spec.containers as unknown[]), ...((spec.initContainers as unknown[]) ?? [])];
        const sc = spec.securityContext as Record<string, unknown>;
        return (
          spec.hostNetwork === false &&
          spec.hostPID === false &&
          sc.runAsNonRoot === true &&
          sc.runAsUser !== 0 &&
          ((spec.volumes as unknown[]) ?? []).every((v) => isRecord(v) && !('hostPath' in v)) &&
          containers.every((c) => {
            const s = isRecord(c) && isRecord(c.securityContext) ? c.securityContext : {};
            const ports = isRecord(c) && Array.isArray(c.ports) ? c.ports : [];
            return (
              s.privileged === false &&
              s.allowPrivilegeEscalation === false &&
              s.runAsUser !== 0 &&
              JSON.stringify(s.capabilities) === '{"drop":["ALL"]}' &&
              ports.every((p) => !isRecord(p) || !p.hostPort)
            );
          })
        );
      }),
    );
  });
});

describe('podPlacementProblems', () => {
  it('refuses a chosen node, a system priority class and tolerations of every or reserved taint', () => {
    const problems = podPlacementProblems(
      template({
        nodeName: 'control-plane-1',
        priorityClassName: 'system-node-critical',
        tolerations: [
          { operator: 'Exists' },
          { key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' },
          { key: 'node.kubernetes.io/unschedulable', operator: 'Exists' },
          { key: 'dedicated', operator: 'Equal', value: 'db', effect: 'NoSchedule' },
        ],
      }),
    );
    expect(problems.map((p) => p.field)).toEqual([
      'spec.template.spec.nodeName',
      'spec.template.spec.priorityClassName',
      'spec.template.spec.tolerations[0]',
      'spec.template.spec.tolerations[1]',
      'spec.template.spec.tolerations[2]',
    ]);
    expect(problems[0]?.message).toContain('use nodeSelector or affinity');
  });

  it('leaves nodeSelector, affinity, other priority classes and keyed tolerations alone', () => {
    expect(
      podPlacementProblems(
        template({
          nodeSelector: { pool: 'db' },
          affinity: { nodeAffinity: {} },
          priorityClassName: 'batch-low',
          tolerations: [{ key: 'dedicated', operator: 'Exists' }],
        }),
      ),
    ).toEqual([]);
  });

  it('is part of what sanitizeUntrustedPodTemplate refuses', () => {
    const r = sanitizeUntrustedPodTemplate(template({ nodeName: 'n1' }));
    expect(r.ok).toBe(false);
  });
});
