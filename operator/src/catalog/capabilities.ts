// The capabilities the catalog wants an ApplicationInstance to advertise (DESIGN §1): the catalog
// entry first, then the chart's annotations where the entry opts in. Never from workloads. What the
// instance finally advertises also depends on who owns each annotation: instance/capabilities.ts.

import { CAPABILITY_ANNOTATION_PREFIX } from '../api/annotations.ts';
import type { EffectiveCapability } from '../api/applicationinstance.ts';
import {
  CAPABILITY_ENGINES,
  CAPABILITY_VERBS,
  type CapabilityEngine,
  type CapabilitySource,
  type CapabilityVerb,
} from '../api/enums.ts';
import type { ApplicationEntry } from './catalog-schema.ts';

export interface IgnoredCapability {
  verb: string;
  value: string;
  source: CapabilitySource;
  reason: string;
}

export interface CapabilityResult {
  /** One entry per verb, in CAPABILITY_VERBS order, sources catalog or chart. */
  capabilities: EffectiveCapability[];
  /** Annotations that were not used, and why (for an Event or a log line). */
  ignored: IgnoredCapability[];
}

const isVerb = (v: string): v is CapabilityVerb => (CAPABILITY_VERBS as readonly string[]).includes(v);
const isEngine = (v: string): v is CapabilityEngine => (CAPABILITY_ENGINES as readonly string[]).includes(v);

/** `ops.vworkspace.io/<verb>` annotations → [verb, value]; other keys (paused, approve, ...) are not capabilities. */
export function capabilityAnnotations(
  annotations: Readonly<Record<string, string>> | undefined,
): [CapabilityVerb, string][] {
  const out: [CapabilityVerb, string][] = [];
  for (const [key, value] of Object.entries(annotations ?? {})) {
    if (!key.startsWith(CAPABILITY_ANNOTATION_PREFIX)) continue;
    const verb = key.slice(CAPABILITY_ANNOTATION_PREFIX.length);
    if (isVerb(verb)) out.push([verb, value.trim()]);
  }
  return out;
}

export const isCapabilityEngine = isEngine;

/** Catalog entry, then opted-in chart annotations for the verbs the entry does not set. */
export function desiredCapabilities(
  catalogEntry: Pick<ApplicationEntry, 'capabilities' | 'chartAnnotations'> | undefined,
  chartAnnotations: Readonly<Record<string, string>> | undefined,
): CapabilityResult {
  const chosen = new Map<CapabilityVerb, EffectiveCapability>();
  const ignored: IgnoredCapability[] = [];

  for (const [verb, engine] of Object.entries(catalogEntry?.capabilities ?? {}) as [
    CapabilityVerb,
    CapabilityEngine,
  ][]) {
    chosen.set(verb, { verb, engine, source: 'catalog' });
  }

  const consider = (verb: CapabilityVerb, value: string, source: CapabilitySource) => {
    const current = chosen.get(verb);
    if (current) {
      if (current.engine !== value) {
        ignored.push({
          verb,
          value,
          source,
          reason: `overridden by the ${current.source} (${current.engine})`,
        });
      }
      return;
    }
    if (!isEngine(value)) {
      ignored.push({
        verb,
        value,
        source,
        reason: `unknown engine; engines are ${CAPABILITY_ENGINES.join(', ')}`,
      });
      return;
    }
    chosen.set(verb, { verb, engine: value, source });
  };

  for (const [verb, value] of capabilityAnnotations(chartAnnotations)) {
    if (catalogEntry?.chartAnnotations === true) consider(verb, value, 'chart');
    else {
      ignored.push({
        verb,
        value,
        source: 'chart',
        reason: 'the catalog entry does not opt in to chart annotations (chartAnnotations: true)',
      });
    }
  }

  const capabilities = CAPABILITY_VERBS.flatMap((v) => {
    const c = chosen.get(v);
    return c ? [c] : [];
  });
  return { capabilities, ignored };
}

/** The annotations that make an instance advertise exactly `capabilities` (what Pull mode projects). */
export function capabilityAnnotationsOf(
  capabilities: readonly EffectiveCapability[],
): Record<string, string> {
  return Object.fromEntries(capabilities.map((c) => [`${CAPABILITY_ANNOTATION_PREFIX}${c.verb}`, c.engine]));
}
