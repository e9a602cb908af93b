// What a velero Backup of an instance takes and a Restore of it brings back (docs/engines.md, velero).
import { LABEL_HELM_INSTANCE, LABEL_RELEASE } from '../api/annotations.ts';
import { APPLICATION_INSTANCE, CRON_OPERATION, OPERATION, WATCH_OPERATION } from '../api/constants.ts';
import type { Json } from './object.ts';
import type { CancelAction, MaterializeInput } from './types.ts';

export const VELERO_API_VERSION = 'velero.io/v1';

interface LabelSelector {
  matchLabels: Record<string, string>;
}

/**
 * What a Backup of an instance takes and a Restore of it brings back, as Velero's orLabelSelectors (any
 * one matches): the release's objects; Helm's release record (Secrets of type helm.sh/release.v1, or
 * ConfigMaps with Helm's configmap driver, labelled owner=helm, name=<release>), without which helm no
 * longer knows the release after its namespace is gone; and the ApplicationInstance, which the operator
 * labels LABEL_RELEASE before it creates a Backup (instanceLabelPatch). Velero selects by label only
 * (no name filter), and a label selector and orLabelSelectors cannot both be set.
 */
export function releaseSelectors(release: string): LabelSelector[] {
  return [
    { matchLabels: { [LABEL_HELM_INSTANCE]: release } },
    { matchLabels: { owner: 'helm', name: release } },
    { matchLabels: { [LABEL_RELEASE]: release } },
  ];
}

/**
 * Never in a backup, whatever their labels: a restored Operation has no status and would run again (a
 * restored Restore would restore again), and a restored CronOperation or WatchOperation would start
 * creating Operations before anyone looked at what came back.
 */
export const NEVER_BACKED_UP = [OPERATION, CRON_OPERATION, WATCH_OPERATION].map(
  (r) => `${r.plural}.${r.group}`,
);

/**
 * The merge patch that labels the instance for releaseSelectors, or undefined when it already carries
 * the label. Applied by the reconciler right before it creates the Backup (MaterializeResult.prepare).
 */
export function instanceLabelPatch(
  target: MaterializeInput['target'],
  release: string,
): CancelAction | undefined {
  if (target.metadata.labels?.[LABEL_RELEASE] === release) return undefined;
  return {
    kind: 'patch',
    child: {
      apiVersion: APPLICATION_INSTANCE.apiVersion,
      kind: APPLICATION_INSTANCE.kind,
      metadata: { name: target.metadata.name ?? '', namespace: target.metadata.namespace ?? '' },
    },
    patch: { metadata: { labels: { [LABEL_RELEASE]: release } } },
  };
}

/** The parameters among `keys` that are set. */
export function optional(parameters: Json, keys: readonly string[]): Json {
  const out: Json = {};
  for (const k of keys) if (parameters[k] !== undefined) out[k] = parameters[k];
  return out;
}
