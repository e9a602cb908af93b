// Deterministic child names and the metadata every engine child carries. A child's name is a function
// of the Operation's identity, the attempt and (for per-PVC engines) the PVC, so a reconciler that
// restarts mid-way re-derives the same name and finds (or adopts) what it already created.
import { createHash } from 'node:crypto';
import { ANNOTATION_ATTEMPT, ANNOTATION_PVC, LABEL_MANAGED_BY, MANAGED_BY } from '../api/annotations.ts';
import {
  LABEL_CRON_OPERATION,
  LABEL_OPERATION,
  LABEL_OPERATION_NAMESPACE,
  LABEL_OPERATION_UID,
  OPERATION,
} from '../api/index.ts';
import type { Operation } from '../api/operation.ts';
import { schedulerOwner } from '../api/scheduler-owner.ts';
import type { ChildManifest } from './types.ts';
export { ANNOTATION_ATTEMPT, ANNOTATION_PVC, LABEL_MANAGED_BY, MANAGED_BY };

/** Longest name each child kind tolerates (see docs/engines.md for why each limit is what it is). */
export const NAME_LIMITS = {
  /** The Job controller copies the name into the `job-name` / `batch.kubernetes.io/job-name` labels. */
  job: 63,
  /** VolSync names its mover Job `volsync-src-<name>` / `volsync-dst-<name>`, which must fit 63. */
  volsync: 50,
  /** Velero copies the name into the `velero.io/backup-name` / `restore-name` labels on what it touches. */
  velero: 63,
  /** The Workflow name prefixes its pod names (`<workflow>-<template>-<hash>`); keep it a DNS label. */
  workflow: 63,
  /** A DNS subdomain would do, but a label-sized name keeps `kubectl get` readable and label-safe. */
  snapshot: 63,
} as const;

export const HASH_LENGTH = 8;
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** 40 bits of sha256, lowercase base32: enough that per-PVC siblings never collide in practice. */
export function shortHash(input: string): string {
  const digest = createHash('sha256').update(input).digest();
  let bits = 0n;
  for (let i = 0; i < 5; i++) bits = (bits << 8n) | BigInt(digest[i] ?? 0);
  let out = '';
  for (let i = HASH_LENGTH - 1; i >= 0; i--) out += BASE32[Number((bits >> BigInt(i * 5)) & 31n)];
  return out;
}

/**
 * `<op-name>-<hash>`: the hash covers the Operation's uid (namespace/name before it has one), the
 * attempt and the per-child suffix. The Operation name is cut (never the hash) when the whole would
 * exceed `maxLength`; trailing dashes are dropped so the result stays a DNS label.
 */
export function childName(op: Operation, attempt: number, maxLength: number, suffix = ''): string {
  const identity = op.metadata.uid ?? `${op.metadata.namespace ?? ''}/${op.metadata.name ?? ''}`;
  const hash = shortHash(`${identity}\n${attempt}\n${suffix}`);
  const room = maxLength - HASH_LENGTH - 1;
  const base = (op.metadata.name ?? 'op').slice(0, room).replace(/-+$/, '');
  return `${base}-${hash}`;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller: boolean;
  blockOwnerDeletion: boolean;
}

/** The controller reference to the Operation; undefined before the Operation has a uid (a plan). */
export function operationOwnerReference(op: Operation): OwnerReference | undefined {
  const { name, uid } = op.metadata;
  if (!name || !uid) return undefined;
  return {
    apiVersion: OPERATION.apiVersion,
    kind: OPERATION.kind,
    name,
    uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

export interface ChildMetadataOptions {
  name: string;
  /** Where the child lives; defaults to the Operation's namespace. */
  namespace?: string;
  attempt: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/**
 * Metadata of a child. In the Operation's namespace: an owner reference (garbage collection and
 * watch mapping). Elsewhere (Velero's namespace) owner references cannot cross namespaces, so the
 * operation and operation-namespace labels are how the operator maps and cleans the child up, and the
 * operation-uid label is how it recognises the child as its own (ownership.ts).
 */
export function childMetadata(
  op: Operation,
  o: ChildMetadataOptions,
): ChildManifest['metadata'] & {
  ownerReferences?: OwnerReference[];
} {
  const opNamespace = op.metadata.namespace ?? '';
  const namespace = o.namespace ?? opNamespace;
  const sameNamespace = namespace === opNamespace;
  const owner = sameNamespace ? operationOwnerReference(op) : undefined;
  return {
    name: o.name,
    namespace,
    labels: {
      ...o.labels,
      [LABEL_MANAGED_BY]: MANAGED_BY,
      [LABEL_OPERATION]: op.metadata.name ?? '',
      ...(sameNamespace
        ? {}
        : {
            [LABEL_OPERATION_NAMESPACE]: opNamespace,
            ...(op.metadata.uid ? { [LABEL_OPERATION_UID]: op.metadata.uid } : {}),
          }),
    },
    annotations: { ...o.annotations, [ANNOTATION_ATTEMPT]: String(attempt(o.attempt)) },
    ...(owner ? { ownerReferences: [owner] } : {}),
  };
}

/**
 * On a backup (velero Backup, VolumeSnapshot) an Operation of a CronOperation makes: that CronOperation's
 * name, from the Operation's controller ownerReference (which only the operator writes), never from its
 * labels. Its spec.retention judges exactly the backups that carry it (docs/retention.md).
 */
export function cronOperationLabel(op: Operation): Record<string, string> {
  const owner = schedulerOwner(op, 'CronOperation');
  return owner ? { [LABEL_CRON_OPERATION]: owner.name } : {};
}

function attempt(n: number): number {
  return Number.isInteger(n) && n > 0 ? n : 1;
}

/** The release the target describes: its name and namespace (the instance's own by default). */
export function releaseOf(target: {
  metadata: { namespace?: string };
  spec: { release: { name: string; namespace?: string } };
}): {
  name: string;
  namespace: string;
} {
  return {
    name: target.spec.release.name,
    namespace: target.spec.release.namespace ?? target.metadata.namespace ?? '',
  };
}
