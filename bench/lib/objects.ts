// The objects the scenarios create, operator side and peer side, built alike so the two sides do the
// same work: a RunCommand Operation's child Job and a raw Job run the same container; a CronOperation
// and a CronJob fire on the same schedule. Pure.
import { gzipSync } from 'node:zlib';
import { TINY_APP_REF } from '../../hack/lib/helm.ts';

export const IMAGE = 'docker.io/library/busybox:1.37.0';
const COMMAND = ['sh', '-c', 'true'];
export const LABEL_BENCH = 'bench.vworkspace.io/run';

type Obj = Record<string, unknown>;

/** A namespace, labelled with the run it belongs to (and `labels`). */
export function namespace(name: string, run: string, labels: Record<string, string> = {}): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { ...labels, [LABEL_BENCH]: run } },
  };
}

/** An ApplicationInstance of a Helm release of the same name that offers RunCommand through a Job. */
export function instance(name: string, ns: string): Obj {
  return {
    apiVersion: 'apps.vworkspace.io/v1alpha1',
    kind: 'ApplicationInstance',
    metadata: { name, namespace: ns, annotations: { 'ops.vworkspace.io/runcommand': 'job' } },
    spec: {
      appRef: TINY_APP_REF,
      release: { name, namespace: ns },
    },
  };
}

/** Helm's record of a deployed release (what `helm install` leaves): makes the instance Ready. */
export function releaseSecret(release: string, ns: string): Obj {
  const record = JSON.stringify({
    name: release,
    namespace: ns,
    version: 1,
    info: { status: 'deployed' },
    chart: { metadata: { name: 'tiny', version: '1.0.0', appVersion: '1.0' } },
  });
  const helmEncoded = gzipSync(Buffer.from(record)).toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: `sh.helm.release.v1.${release}.v1`,
      namespace: ns,
      labels: { owner: 'helm', name: release, version: '1', status: 'deployed' },
    },
    type: 'helm.sh/release.v1',
    data: { release: Buffer.from(helmEncoded).toString('base64') },
  };
}

export function serviceAccount(name: string, ns: string): Obj {
  return { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } };
}

/** A RunCommand Operation through the Job engine (its child is a Job running `true`). */
export function runCommand(name: string, ns: string, target: string): Obj {
  return {
    apiVersion: 'ops.vworkspace.io/v1alpha1',
    kind: 'Operation',
    metadata: { name, namespace: ns },
    spec: {
      type: 'RunCommand',
      engine: 'job',
      targetRef: { name: target },
      parameters: { image: IMAGE, command: COMMAND },
    },
  };
}

/** The peer of a RunCommand's child: a Job running the same container. */
export function job(name: string, ns: string): Obj {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: ns },
    spec: {
      backoffLimit: 0,
      template: {
        spec: { restartPolicy: 'Never', containers: [{ name: 'run', image: IMAGE, command: COMMAND }] },
      },
    },
  };
}

/** Every minute, an Operation on a target that does not exist (it waits, cheaply, as TargetNotFound). */
export function cronOperation(name: string, ns: string): Obj {
  return {
    apiVersion: 'ops.vworkspace.io/v1alpha1',
    kind: 'CronOperation',
    metadata: { name, namespace: ns },
    spec: {
      schedule: '* * * * *',
      operationTemplate: {
        spec: {
          type: 'RunCommand',
          engine: 'job',
          targetRef: { name: `absent-${name}` },
          parameters: { image: IMAGE, command: COMMAND },
        },
      },
    },
  };
}

/** Every minute, a suspended Job (created, never run: the peer side's cheap run). */
export function cronJob(name: string, ns: string): Obj {
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { name, namespace: ns },
    spec: {
      schedule: '* * * * *',
      jobTemplate: {
        spec: {
          suspend: true,
          template: {
            spec: { restartPolicy: 'Never', containers: [{ name: 'run', image: IMAGE, command: COMMAND }] },
          },
        },
      },
    },
  };
}
