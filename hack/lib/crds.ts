// Installs CustomResourceDefinitions from YAML files and waits until the API server serves them.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ApiException,
  ApiextensionsV1Api,
  KubeConfig,
  loadAllYaml,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';

// loadAllYaml, not a plain YAML parser: the typed client serializes through its model classes,
// which silently drop `x-kubernetes-*` keys unless the object was deserialized into them first.
export function readCrds(files: string[]): V1CustomResourceDefinition[] {
  const crds: V1CustomResourceDefinition[] = [];
  for (const file of files) {
    for (const obj of loadAllYaml(readFileSync(file, 'utf8')) as Array<V1CustomResourceDefinition | null>) {
      if (obj?.kind === 'CustomResourceDefinition') crds.push(obj);
    }
  }
  return crds;
}

/** Creates each CRD, or replaces it when it exists, then waits for Established=True on all. */
export async function installCrds(
  kubeconfigPath: string,
  files: string[],
  timeoutMs = 180_000,
): Promise<string[]> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const names: string[] = [];
  for (const crd of readCrds(files)) {
    const name = crd.metadata?.name;
    if (!name) throw new Error(`a CRD in ${files.join(', ')} has no metadata.name`);
    names.push(name);
    try {
      await api.createCustomResourceDefinition({ body: crd });
    } catch (err) {
      if (!(err instanceof ApiException) || err.code !== 409) throw describe(err, name);
      const current = await api.readCustomResourceDefinition({ name });
      crd.metadata = { ...crd.metadata, resourceVersion: current.metadata?.resourceVersion };
      await api.replaceCustomResourceDefinition({ name, body: crd }).catch((e: unknown) => {
        throw describe(e, name);
      });
    }
  }
  const deadline = Date.now() + timeoutMs;
  for (const name of names) {
    for (;;) {
      const crd = await api.readCustomResourceDefinition({ name });
      const established = crd.status?.conditions?.find((c) => c.type === 'Established');
      if (established?.status === 'True') break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} not Established after ${timeoutMs} ms`);
      await sleep(100);
    }
  }
  return names;
}

function describe(err: unknown, name: string): Error {
  if (err instanceof ApiException) {
    const body = typeof err.body === 'string' ? err.body : JSON.stringify(err.body);
    return new Error(`installing CRD ${name} failed (HTTP ${err.code}): ${body.slice(0, 2000)}`);
  }
  return err instanceof Error ? err : new Error(String(err));
}
