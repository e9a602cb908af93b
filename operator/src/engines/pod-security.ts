// Sanitizing an UNTRUSTED pod template (the chart's migration Job read from a namespace ConfigMap; later
// the chart's real Helm hook Jobs, issue 13): whoever can write that object would otherwise run a pod
// through the operator's identity with whatever it asks for. Anything beyond the Kubernetes "restricted"
// Pod Security Standard is refused, naming the field, rather than silently changed (a migration that
// quietly runs without what it asked for fails later in a way nobody can explain); then the restricted
// settings are forced, whatever the template said. Pure.
import { arr, at, isRecord, type Json, str } from './object.ts';

export interface PodSecurityProblem {
  /** Field path from the object the template sits in, e.g. `spec.template.spec.hostPID`. */
  field: string;
  message: string;
}

export type SanitizeResult =
  | { ok: true; template: { metadata: Json; spec: Json } }
  | { ok: false; problems: PodSecurityProblem[] };

/** Volume sources the restricted standard allows: nothing that reaches the node or a remote host directly. */
export const ALLOWED_VOLUME_SOURCES = [
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
] as const;

/** SELinux types the baseline standard allows a pod to ask for. */
const SELINUX_TYPES = ['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t'];
const APPARMOR_ANNOTATION = 'container.apparmor.security.beta.kubernetes.io/';
const HOST_NAMESPACES = ['hostNetwork', 'hostPID', 'hostIPC'] as const;

/** Checks shared by the pod's and each container's securityContext. */
function contextProblems(sc: unknown, path: string, out: PodSecurityProblem[]): void {
  if (!isRecord(sc)) return;
  const refuse = (field: string, what: string) =>
    out.push({ field: `${path}.${field}`, message: `${what} is not allowed` });
  if (sc.runAsNonRoot === false) refuse('runAsNonRoot', 'running as root (runAsNonRoot: false)');
  if (sc.runAsUser === 0) refuse('runAsUser', 'running as root (runAsUser: 0)');
  if (str(at(sc, 'seccompProfile', 'type')) === 'Unconfined')
    refuse('seccompProfile.type', 'an Unconfined seccomp profile');
  if (str(at(sc, 'appArmorProfile', 'type')) === 'Unconfined')
    refuse('appArmorProfile.type', 'an Unconfined AppArmor profile');
  if (at(sc, 'windowsOptions', 'hostProcess') === true)
    refuse('windowsOptions.hostProcess', 'a Windows host process');
  const se = sc.seLinuxOptions;
  if (isRecord(se)) {
    if (se.user !== undefined) refuse('seLinuxOptions.user', 'choosing an SELinux user');
    if (se.role !== undefined) refuse('seLinuxOptions.role', 'choosing an SELinux role');
    if (!SELINUX_TYPES.includes(str(se.type) ?? ''))
      refuse('seLinuxOptions.type', `SELinux type ${JSON.stringify(se.type)}`);
  }
}

function containerProblems(c: unknown, path: string, out: PodSecurityProblem[]): void {
  if (!isRecord(c)) return;
  const sc = c.securityContext;
  const scPath = `${path}.securityContext`;
  contextProblems(sc, scPath, out);
  if (isRecord(sc)) {
    if (sc.privileged === true)
      out.push({ field: `${scPath}.privileged`, message: `a privileged container is not allowed` });
    if (sc.allowPrivilegeEscalation === true)
      out.push({
        field: `${scPath}.allowPrivilegeEscalation`,
        message: `privilege escalation is not allowed`,
      });
    const add = arr(at(sc, 'capabilities', 'add'));
    if (add.length > 0)
      out.push({
        field: `${scPath}.capabilities.add`,
        message: `adding capabilities (${add.map(String).join(', ')}) is not allowed; every capability is dropped`,
      });
    if (sc.procMount !== undefined && sc.procMount !== 'Default')
      out.push({ field: `${scPath}.procMount`, message: `procMount ${String(sc.procMount)} is not allowed` });
  }
  arr(c.ports).forEach((p, j) => {
    if (isRecord(p) && typeof p.hostPort === 'number' && p.hostPort !== 0)
      out.push({
        field: `${path}.ports[${j}].hostPort`,
        message: `a host port (${p.hostPort}) is not allowed`,
      });
  });
}

/** Everything in the template that asks for more than the restricted standard; empty when nothing does. */
export function podSecurityProblems(template: unknown, path = 'spec.template'): PodSecurityProblem[] {
  const out: PodSecurityProblem[] = [];
  const spec = at(template, 'spec');
  const specPath = `${path}.spec`;
  for (const f of HOST_NAMESPACES) {
    if (at(spec, f) === true)
      out.push({
        field: `${specPath}.${f}`,
        message: `sharing the node's ${f.slice(4)} namespace is not allowed`,
      });
  }
  const psc = at(spec, 'securityContext');
  contextProblems(psc, `${specPath}.securityContext`, out);
  if (arr(at(psc, 'sysctls')).length > 0)
    out.push({ field: `${specPath}.securityContext.sysctls`, message: `setting sysctls is not allowed` });
  arr(at(spec, 'volumes')).forEach((v, i) => {
    if (!isRecord(v)) return;
    for (const k of Object.keys(v)) {
      if (k === 'name' || (ALLOWED_VOLUME_SOURCES as readonly string[]).includes(k)) continue;
      out.push({
        field: `${specPath}.volumes[${i}].${k}`,
        message: `a ${k} volume is not allowed (allowed: ${ALLOWED_VOLUME_SOURCES.join(', ')})`,
      });
    }
  });
  for (const list of ['initContainers', 'containers'] as const) {
    arr(at(spec, list)).forEach((c, i) => {
      containerProblems(c, `${specPath}.${list}[${i}]`, out);
    });
  }
  if (arr(at(spec, 'ephemeralContainers')).length > 0)
    out.push({
      field: `${specPath}.ephemeralContainers`,
      message: `ephemeral containers are not allowed`,
    });
  const annotations = at(template, 'metadata', 'annotations');
  if (isRecord(annotations)) {
    for (const [k, v] of Object.entries(annotations)) {
      if (k.startsWith(APPARMOR_ANNOTATION) && v === 'unconfined')
        out.push({
          field: `${path}.metadata.annotations[${k}]`,
          message: `an unconfined AppArmor profile is not allowed`,
        });
    }
  }
  return out;
}

/**
 * Taints that keep ordinary workloads off nodes: control-plane nodes, and cordoned ones. A toleration with
 * no key and operator Exists tolerates every taint.
 */
const PROTECTED_TAINT_PREFIXES = ['node-role.kubernetes.io/'];
const PROTECTED_TAINTS = ['node.kubernetes.io/unschedulable'];

/**
 * Where a pod runs and what it may displace, beyond what a namespace's own workload may choose through the
 * operator (ADR 0028): a node by name (nodeName skips the scheduler, and with it every taint and the
 * node's capacity), a system-* priority class (preempts the cluster's own critical pods), and tolerating
 * every taint or those reserving control-plane and cordoned nodes. Affinity, nodeSelector and keyed
 * tolerations stay: the scheduler still honours every other taint.
 */
export function podPlacementProblems(template: unknown, path = 'spec.template'): PodSecurityProblem[] {
  const out: PodSecurityProblem[] = [];
  const spec = at(template, 'spec');
  const specPath = `${path}.spec`;
  const nodeName = str(at(spec, 'nodeName'));
  if (nodeName)
    out.push({
      field: `${specPath}.nodeName`,
      message: `choosing the node (${nodeName}) is not allowed: it skips the scheduler and every taint; use nodeSelector or affinity`,
    });
  const priority = str(at(spec, 'priorityClassName'));
  if (priority?.startsWith('system-'))
    out.push({
      field: `${specPath}.priorityClassName`,
      message: `priority class ${priority} is not allowed: it is reserved for the cluster's own critical pods, which it could preempt`,
    });
  arr(at(spec, 'tolerations')).forEach((t, i) => {
    if (!isRecord(t)) return;
    const key = str(t.key) ?? '';
    const every = key === '' && t.operator === 'Exists';
    const reserved =
      PROTECTED_TAINTS.includes(key) || PROTECTED_TAINT_PREFIXES.some((p) => key.startsWith(p));
    if (every || reserved)
      out.push({
        field: `${specPath}.tolerations[${i}]`,
        message: every
          ? 'tolerating every taint (no key, operator Exists) is not allowed'
          : `tolerating ${key} is not allowed: it keeps workloads off control-plane and cordoned nodes`,
      });
  });
  return out;
}

/** Container securityContext with the restricted settings forced (readOnlyRootFilesystem only defaulted). */
function forceContainer(c: unknown): unknown {
  if (!isRecord(c)) return c;
  const sc: Json = isRecord(c.securityContext) ? { ...c.securityContext } : {};
  sc.privileged = false;
  sc.allowPrivilegeEscalation = false;
  sc.capabilities = { drop: ['ALL'] };
  // The restricted standard leaves the root filesystem alone; read-only unless the chart says otherwise.
  sc.readOnlyRootFilesystem ??= true;
  if (sc.runAsNonRoot !== undefined) sc.runAsNonRoot = true;
  return { ...c, securityContext: sc };
}

/**
 * The template with the restricted standard forced, or the problems that make it unrunnable (the
 * restricted standard's, and podPlacementProblems). Host
 * namespaces are set false, every container drops every capability and may not escalate, the pod runs
 * non-root with RuntimeDefault seccomp (a Localhost profile the template names is kept: the restricted
 * standard allows it).
 */
export function sanitizeUntrustedPodTemplate(template: unknown, path = 'spec.template'): SanitizeResult {
  const problems = [...podSecurityProblems(template, path), ...podPlacementProblems(template, path)];
  if (problems.length > 0) return { ok: false, problems };
  const metadata: Json = isRecord(at(template, 'metadata')) ? { ...(at(template, 'metadata') as Json) } : {};
  const spec: Json = isRecord(at(template, 'spec')) ? { ...(at(template, 'spec') as Json) } : {};
  for (const f of HOST_NAMESPACES) spec[f] = false;
  const psc: Json = isRecord(spec.securityContext) ? { ...spec.securityContext } : {};
  psc.runAsNonRoot = true;
  if (str(at(psc, 'seccompProfile', 'type')) !== 'Localhost') psc.seccompProfile = { type: 'RuntimeDefault' };
  spec.securityContext = psc;
  spec.containers = arr(spec.containers).map(forceContainer);
  if (spec.initContainers !== undefined) spec.initContainers = arr(spec.initContainers).map(forceContainer);
  return { ok: true, template: { metadata, spec } };
}
