import type { KubernetesObject, V1ManagedFieldsEntry } from '@kubernetes/client-node';
import { leanManagedFields } from '@vworkspace/runtime';
import { describe, expect, it } from 'vitest';
import type { ApplicationInstance } from '../api/applicationinstance.ts';
import { annotationOwners } from './capabilities.ts';

function entry(manager: string, operation: string, fieldsV1: Record<string, unknown>, subresource?: string) {
  return {
    manager,
    operation,
    fieldsType: 'FieldsV1',
    fieldsV1,
    apiVersion: 'v1',
    ...(subresource ? { subresource } : {}),
  } as V1ManagedFieldsEntry;
}

function object(managedFields?: V1ManagedFieldsEntry[]): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'a', namespace: 'ns', ...(managedFields ? { managedFields } : {}) },
  };
}

describe('leanManagedFields', () => {
  it('drops entries that own no annotation and everything but annotation keys from the rest', () => {
    const o = object([
      entry('kubectl', 'Update', { 'f:data': { 'f:x': {} }, 'f:metadata': { 'f:labels': { 'f:a': {} } } }),
      entry('gitops', 'Apply', {
        'f:metadata': {
          'f:annotations': { '.': {}, 'f:ops.vworkspace.io/backup': {} },
          'f:labels': { 'f:b': {} },
        },
        'f:spec': { 'f:y': {} },
      }),
      entry('vworkspace-operator', 'Apply', { 'f:status': { 'f:phase': {} } }, 'status'),
    ]);
    leanManagedFields(o);
    expect(o.metadata?.managedFields).toEqual([
      {
        manager: 'gitops',
        operation: 'Apply',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:metadata': { 'f:annotations': { '.': {}, 'f:ops.vworkspace.io/backup': {} } } },
      },
    ]);
  });

  it('removes managedFields when no entry owns an annotation, and leaves objects without them alone', () => {
    const o = object([
      entry('kubectl', 'Update', { 'f:data': {} }),
      entry('x', 'Update', { 'f:metadata': { 'f:annotations': { '.': {} } } }),
    ]);
    expect(leanManagedFields(o).metadata).toEqual({ name: 'a', namespace: 'ns' });
    const bare = object();
    expect(leanManagedFields(bare)).toEqual(object());
  });

  it('keeps what the capability planner reads: the same owners before and after', () => {
    const instance = {
      apiVersion: 'ops.vworkspace.io/v1alpha1',
      kind: 'ApplicationInstance',
      metadata: {
        name: 'app',
        namespace: 'ns',
        annotations: { 'ops.vworkspace.io/backup': 'velero', 'ops.vworkspace.io/upgrade': 'helm' },
        managedFields: [
          entry('vworkspace-operator', 'Apply', {
            'f:metadata': { 'f:annotations': { 'f:ops.vworkspace.io/upgrade': {} } },
          }),
          entry('argocd', 'Apply', {
            'f:metadata': { 'f:annotations': { 'f:ops.vworkspace.io/backup': {} } },
            'f:spec': { 'f:release': {} },
          }),
          entry('kube-controller-manager', 'Update', { 'f:status': { 'f:conditions': {} } }, 'status'),
        ],
      },
      spec: {},
    } as unknown as ApplicationInstance;
    const before = annotationOwners(structuredClone(instance), 'vworkspace-operator');
    const after = annotationOwners(leanManagedFields(instance), 'vworkspace-operator');
    expect(after).toEqual(before);
    expect(after.ours).toEqual(new Set(['ops.vworkspace.io/upgrade']));
    expect(after.others.get('ops.vworkspace.io/backup')).toEqual(['argocd']);
  });
});
