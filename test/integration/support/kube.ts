// Helpers shared by integration tests: the admin KubeConfig of the shared control plane and
// throw-away namespaces.
import { randomBytes } from 'node:crypto';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { inject } from 'vitest';

export function adminKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(inject('kubeconfig'));
  return kc;
}

/** Creates a namespace with a random suffix; returns its name. */
export async function createNamespace(kc: KubeConfig, prefix = 'it'): Promise<string> {
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}
