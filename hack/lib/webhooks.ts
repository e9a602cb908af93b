// Webhook configurations from the bundle's CSV `spec.webhookdefinitions`, pointed at a URL instead
// of OLM's Service: what OLM would create on a cluster, for a local control plane or a kwok cluster
// where the operator runs as a host process (fake pods cannot serve webhooks).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isNotFound, type KubeClient } from '@vworkspace/runtime';
import { parse } from 'yaml';
import { ROOT } from './controlplane.ts';

export interface WebhookDefinition {
  type: 'ValidatingAdmissionWebhook' | 'MutatingAdmissionWebhook';
  generateName: string;
  webhookPath: string;
  admissionReviewVersions: string[];
  failurePolicy?: string;
  sideEffects: string;
  timeoutSeconds?: number;
  rules: unknown[];
  objectSelector?: unknown;
  matchPolicy?: string;
  reinvocationPolicy?: string;
}

export function csvWebhookDefinitions(
  csvPath = join(ROOT, 'bundle/manifests/vworkspace-operator.clusterserviceversion.yaml'),
): WebhookDefinition[] {
  const csv = parse(readFileSync(csvPath, 'utf8')) as { spec?: { webhookdefinitions?: WebhookDefinition[] } };
  return csv.spec?.webhookdefinitions ?? [];
}

interface WebhookConfiguration {
  apiVersion: 'admissionregistration.k8s.io/v1';
  kind: 'ValidatingWebhookConfiguration' | 'MutatingWebhookConfiguration';
  metadata: { name: string };
  webhooks: Record<string, unknown>[];
}

/** One configuration per kind of webhook, each webhook calling `${baseUrl}${webhookPath}`. Pure. */
export function webhookConfigurations(
  defs: readonly WebhookDefinition[],
  baseUrl: string,
  caPem: string,
  name = 'vworkspace-operator',
): WebhookConfiguration[] {
  const caBundle = Buffer.from(caPem).toString('base64');
  const hook = (d: WebhookDefinition) => ({
    name: d.generateName,
    admissionReviewVersions: d.admissionReviewVersions,
    sideEffects: d.sideEffects,
    failurePolicy: d.failurePolicy ?? 'Fail',
    timeoutSeconds: d.timeoutSeconds ?? 10,
    rules: d.rules,
    clientConfig: { url: `${baseUrl}${d.webhookPath}`, caBundle },
    ...(d.objectSelector ? { objectSelector: d.objectSelector } : {}),
    ...(d.matchPolicy ? { matchPolicy: d.matchPolicy } : {}),
    ...(d.type === 'MutatingAdmissionWebhook' && d.reinvocationPolicy
      ? { reinvocationPolicy: d.reinvocationPolicy }
      : {}),
  });
  const configs: WebhookConfiguration[] = [];
  for (const [type, kind] of [
    ['MutatingAdmissionWebhook', 'MutatingWebhookConfiguration'],
    ['ValidatingAdmissionWebhook', 'ValidatingWebhookConfiguration'],
  ] as const) {
    const hooks = defs.filter((d) => d.type === type).map(hook);
    if (hooks.length > 0) {
      configs.push({
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind,
        metadata: { name },
        webhooks: hooks,
      });
    }
  }
  return configs;
}

/** Creates or replaces the configurations. */
export async function applyWebhookConfigurations(
  client: KubeClient,
  configs: WebhookConfiguration[],
): Promise<void> {
  for (const c of configs) {
    const plural =
      c.kind === 'MutatingWebhookConfiguration'
        ? 'mutatingwebhookconfigurations'
        : 'validatingwebhookconfigurations';
    const path = `/apis/admissionregistration.k8s.io/v1/${plural}`;
    try {
      const current = await client.request<{ metadata: { resourceVersion: string } }>({
        method: 'GET',
        path: `${path}/${c.metadata.name}`,
      });
      await client.request({
        method: 'PUT',
        path: `${path}/${c.metadata.name}`,
        body: { ...c, metadata: { ...c.metadata, resourceVersion: current.metadata.resourceVersion } },
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await client.request({ method: 'POST', path, body: c });
    }
  }
}
