// Pull mode (DESIGN §1): the operator projects the capabilities the catalog wants (catalog entry, then
// opted-in chart annotations) onto the instance as annotations, with server-side apply under its own
// field manager and without force. An annotation another manager owns (Push tooling, GitOps, kubectl)
// is never overwritten: that manager wins, and the instance advertises its value. status.capabilities
// reports what the instance finally advertises, since that is what admission and preconditions read.
// Pure: the controller reads the caches, this decides, the controller writes.

import type { V1ManagedFieldsEntry } from '@kubernetes/client-node';
import { CAPABILITY_ANNOTATION_PREFIX } from '../api/annotations.ts';
import type { ApplicationInstance, EffectiveCapability } from '../api/applicationinstance.ts';
import { CAPABILITY_VERBS, type CapabilityVerb } from '../api/enums.ts';
import {
  capabilityAnnotations,
  desiredCapabilities,
  type IgnoredCapability,
  isCapabilityEngine,
} from '../catalog/capabilities.ts';
import type { ApplicationEntry } from '../catalog/catalog-schema.ts';

/** A catalog/chart capability that is not projected because another manager owns the annotation. */
export interface HeldCapability {
  verb: CapabilityVerb;
  wanted: EffectiveCapability;
  /** The value the instance keeps. */
  current: string;
  managers: string[];
}

export interface CapabilityPlan {
  /**
   * The capability annotations to apply under the operator's field manager (complete: keys it owned
   * and leaves out are removed by the API server), or undefined when what it owns is already right.
   */
  apply?: Record<string, string>;
  /** What the instance advertises once `apply` is done: the value of status.capabilities. */
  capabilities: EffectiveCapability[];
  /** What it advertises if the apply cannot be made (the API server refused it): the annotations as they are. */
  unchanged: EffectiveCapability[];
  held: HeldCapability[];
  /** Annotations not used (unknown engine, chart annotations without opt-in, overridden by the catalog). */
  ignored: IgnoredCapability[];
}

const keyOf = (verb: CapabilityVerb) => `${CAPABILITY_ANNOTATION_PREFIX}${verb}`;

type FieldsV1 = Record<string, unknown>;

/** Annotation keys listed in one managedFields entry (`f:metadata` → `f:annotations` → `f:<key>`). */
function annotationKeys(entry: V1ManagedFieldsEntry): string[] {
  const fields = entry.fieldsV1 as FieldsV1 | undefined;
  const meta = fields?.['f:metadata'] as FieldsV1 | undefined;
  const annotations = meta?.['f:annotations'] as FieldsV1 | undefined;
  return Object.keys(annotations ?? {})
    .filter((k) => k.startsWith('f:'))
    .map((k) => k.slice(2));
}

/** Managers of each annotation key, split into "ours" (an Apply entry of `fieldManager`) and others. */
export function annotationOwners(
  instance: ApplicationInstance,
  fieldManager: string,
): { ours: Set<string>; others: Map<string, string[]> } {
  const ours = new Set<string>();
  const others = new Map<string, string[]>();
  for (const entry of instance.metadata.managedFields ?? []) {
    const mine = entry.manager === fieldManager && entry.operation === 'Apply';
    for (const key of annotationKeys(entry)) {
      if (mine) ours.add(key);
      else others.set(key, [...(others.get(key) ?? []), entry.manager ?? '(unknown manager)']);
    }
  }
  return { ours, others };
}

export function planCapabilities(
  instance: ApplicationInstance,
  entry: Pick<ApplicationEntry, 'capabilities' | 'chartAnnotations'> | undefined,
  chartAnnotations: Readonly<Record<string, string>> | undefined,
  fieldManager: string,
): CapabilityPlan {
  const annotations = instance.metadata.annotations ?? {};
  const desired = desiredCapabilities(entry, chartAnnotations);
  const ignored = [...desired.ignored];
  const { ours, others } = annotationOwners(instance, fieldManager);

  const wanted = new Map(desired.capabilities.map((c) => [c.verb, c]));
  const apply: Record<string, string> = {};
  const held: HeldCapability[] = [];
  for (const c of desired.capabilities) {
    const key = keyOf(c.verb);
    const managers = others.get(key) ?? [];
    const current = annotations[key];
    // Another manager set a different value: it wins (Push/GitOps). The same value may be co-owned.
    if (managers.length > 0 && current !== undefined && current !== c.engine) {
      held.push({ verb: c.verb, wanted: c, current, managers });
      continue;
    }
    apply[key] = c.engine;
  }

  // The annotations after the apply: ours that we no longer send disappear (unless co-owned).
  const final: Record<string, string> = { ...annotations };
  for (const key of ours) if (!(key in apply) && !others.has(key)) delete final[key];
  Object.assign(final, apply);

  const owned = Object.fromEntries([...ours].filter((k) => k in annotations).map((k) => [k, annotations[k]]));
  // Same keys with the same values: nothing to write (no resourceVersion bump, no reconcile loop).
  const upToDate =
    Object.keys(owned).length === Object.keys(apply).length &&
    Object.entries(apply).every(([k, v]) => owned[k] === v);

  const described = describe(final, wanted);
  return {
    ...(upToDate ? {} : { apply }),
    capabilities: described.capabilities,
    unchanged: describe(annotations, wanted).capabilities,
    held,
    ignored: [...ignored, ...described.ignored],
  };
}

/** The capabilities `annotations` advertise; a value equal to what the catalog wants keeps that source. */
function describe(
  annotations: Readonly<Record<string, string>>,
  wanted: ReadonlyMap<CapabilityVerb, EffectiveCapability>,
): { capabilities: EffectiveCapability[]; ignored: IgnoredCapability[] } {
  const ignored: IgnoredCapability[] = [];
  const byVerb = new Map<CapabilityVerb, EffectiveCapability>();
  for (const [verb, value] of capabilityAnnotations(annotations)) {
    const w = wanted.get(verb);
    if (w && w.engine === value) {
      byVerb.set(verb, w);
    } else if (isCapabilityEngine(value)) {
      byVerb.set(verb, { verb, engine: value, source: 'manual' });
    } else {
      ignored.push({
        verb,
        value,
        source: 'manual',
        reason: 'unknown engine; the annotation is not a capability',
      });
    }
  }
  const capabilities = CAPABILITY_VERBS.flatMap((v) => {
    const c = byVerb.get(v);
    return c ? [c] : [];
  });
  return { capabilities, ignored };
}
