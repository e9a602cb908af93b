// Test-object builders for catalog tests.
import YAML from 'yaml';
import type { ConfigMapLike } from '../../../operator/src/catalog/parse.ts';
import type { Template } from '../../../operator/src/catalog/template.ts';

export function catalogConfigMap(
  name: string,
  catalog: unknown,
  namespace = 'vworkspace-system',
): ConfigMapLike {
  return {
    metadata: { name, namespace },
    data: { 'catalog.yaml': typeof catalog === 'string' ? catalog : YAML.stringify(catalog) },
  };
}

export function aTemplate(overrides: Partial<Template> = {}): Template {
  return {
    name: 'custom-backup',
    type: 'Backup',
    engine: 'workflow',
    inputSchema: { type: 'object', properties: { bucket: { type: 'string', default: 'b' } } },
    rbacProfile: 'runbook.workflow',
    preconditions: [{ name: 'TargetExists' }],
    ...overrides,
  };
}
