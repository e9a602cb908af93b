// Does a template apply to a target: its capability selectors (any one) and its optional label selector.
import { CAPABILITY_ANNOTATION_PREFIX } from '../api/annotations.ts';
import { capabilitySelectors, type LabelSelector, type Template } from './template.ts';

export type SelectorResult =
  | { ok: true }
  | { ok: false; reason: 'CapabilityMissing' | 'SelectorMismatch'; message: string };

export function matchesLabelSelector(
  selector: LabelSelector | undefined,
  labels: Readonly<Record<string, string>>,
): boolean {
  if (!selector) return true;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const value = labels[e.key];
    const values = e.values ?? [];
    switch (e.operator) {
      case 'In':
        if (!has || !values.includes(value!)) return false;
        break;
      case 'NotIn':
        if (has && values.includes(value!)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
    }
  }
  return true;
}

/** kubectl-style text of a selector, for messages: `tier in (staging), !legacy`. */
export function describeLabelSelector(selector: LabelSelector): string {
  const parts = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of selector.matchExpressions ?? []) {
    const values = (e.values ?? []).join(',');
    if (e.operator === 'In') parts.push(`${e.key} in (${values})`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin (${values})`);
    else if (e.operator === 'Exists') parts.push(e.key);
    else parts.push(`!${e.key}`);
  }
  return parts.join(', ');
}

export function matchTemplateTarget(
  template: Pick<Template, 'name' | 'type' | 'engine' | 'targetSelectors'>,
  target: {
    name: string;
    annotations?: Readonly<Record<string, string>>;
    labels?: Readonly<Record<string, string>>;
  },
): SelectorResult {
  const selectors = capabilitySelectors(template);
  const annotations = target.annotations ?? {};
  const advertised = selectors.some(
    (s) => annotations[`${CAPABILITY_ANNOTATION_PREFIX}${s.verb}`] === s.engine,
  );
  if (!advertised) {
    const wanted = selectors.map((s) => `${CAPABILITY_ANNOTATION_PREFIX}${s.verb}: ${s.engine}`).join(' or ');
    return {
      ok: false,
      reason: 'CapabilityMissing',
      message: `ApplicationInstance ${target.name} does not advertise ${wanted}; add it to its catalog entry (or annotate the instance) to allow ${template.type} with ${template.engine}`,
    };
  }
  const selector = template.targetSelectors?.labelSelector;
  if (!matchesLabelSelector(selector, target.labels ?? {})) {
    return {
      ok: false,
      reason: 'SelectorMismatch',
      message: `template ${template.name} only applies to ApplicationInstances matching ${describeLabelSelector(selector!)}; ${target.name} does not`,
    };
  }
  return { ok: true };
}
