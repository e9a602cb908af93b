// The engine-APIs CSV (the way out for engines installed without OLM, ADR 0031): it provides exactly the
// GVKs the bundle depends on, as installed-CSV properties the resolver reads and as native APIs OLM checks,
// and installs nothing. Its behaviour on a real OLM is test/e2e/real-node/olm.ts's.
import { describe, expect, it } from 'vitest';
import { engineApisCsv, PROPERTIES_ANNOTATION } from './engine-apis.ts';
import { dependencies } from './manifests.ts';

interface Csv {
  metadata: { name: string; annotations: Record<string, string> };
  spec: {
    nativeAPIs: unknown[];
    install: { spec: Record<string, unknown> };
    customresourcedefinitions?: unknown;
    installModes: { type: string; supported: boolean }[];
  };
}

describe('the engine-APIs CSV', () => {
  const csv = engineApisCsv('0.1.0', '1.30.0') as unknown as Csv;
  const gvks = dependencies().map((d) => d.value);

  it('declares the bundle dependencies as properties and as native APIs', () => {
    const props = JSON.parse(csv.metadata.annotations[PROPERTIES_ANNOTATION] ?? '{}') as {
      properties: { type: string; value: Record<string, string> }[];
    };
    expect(props.properties.filter((p) => p.type === 'olm.gvk').map((p) => p.value)).toEqual(gvks);
    expect(props.properties.find((p) => p.type === 'olm.package')?.value).toEqual({
      packageName: 'vworkspace-engine-apis',
      version: '0.1.0',
    });
    expect(csv.spec.nativeAPIs).toEqual(gvks);
  });

  it('installs nothing, owns no CRD and fits every install mode', () => {
    expect(csv.metadata.name).toBe('vworkspace-engine-apis.v0.1.0');
    expect(csv.spec.install.spec).toEqual({ deployments: [] });
    expect(csv.spec.customresourcedefinitions).toBeUndefined();
    expect(csv.spec.installModes.every((m) => m.supported)).toBe(true);
  });
});
