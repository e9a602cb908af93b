import { describe, expect, it } from 'vitest';
import { engineSupportsType, PRECONDITIONS, RBAC_PROFILES } from '../api/enums.ts';
import { validateParameters } from './parameters.ts';
import { formatFieldError, validateWithSchema } from './schema-validation.ts';
import { capabilitySelectors, TemplateSchema } from './template.ts';
import { BUILTIN_TEMPLATES, RUNCOMMAND_IMAGES, veleroRestore } from './templates/index.ts';

const byName = (name: string) => {
  const t = BUILTIN_TEMPLATES.find((x) => x.name === name);
  if (!t) throw new Error(`no built-in ${name}`);
  return t;
};

const fieldErrors = (name: string, params: unknown) => {
  const r = validateParameters(byName(name), params);
  return r.ok ? [] : r.errors.map(formatFieldError);
};

describe('built-in templates', () => {
  it('are the nine of the design, the snapshot restore and the velero and volsync restore drills, with unique names', () => {
    expect(BUILTIN_TEMPLATES.map((t) => `${t.type}/${t.engine}`).sort()).toEqual([
      'Backup/snapshot',
      'Backup/velero',
      'Backup/volsync',
      'Migration/helmHookJob',
      'Restore/snapshot',
      'Restore/velero',
      'Restore/volsync',
      'RunCommand/job',
      'Runbook/workflow',
      'Upgrade/helm',
      'Verify/snapshot',
      'Verify/velero',
      'Verify/volsync',
    ]);
    expect(new Set(BUILTIN_TEMPLATES.map((t) => t.name)).size).toBe(BUILTIN_TEMPLATES.length);
  });

  it.each(BUILTIN_TEMPLATES.map((t) => [t.name, t] as const))('%s is a valid catalog template', (_n, t) => {
    const r = validateWithSchema(TemplateSchema, t, t.name);
    expect(r.ok ? [] : r.errors.map(formatFieldError)).toEqual([]);
    expect(engineSupportsType(t.engine, t.type)).toBe(true);
    expect(RBAC_PROFILES).toContain(t.rbacProfile);
    // Preconditions in evaluation order, each once.
    const order = t.preconditions.map((p) => PRECONDITIONS.indexOf(p.name));
    expect(order).toEqual([...new Set(order)].sort((a, b) => a - b));
    // The schema's own defaults satisfy it.
    const defaults = validateWithSchema(t.inputSchema, {});
    expect(defaults.ok ? [] : defaults.errors.filter((e) => e.type !== 'Required value')).toEqual([]);
    expect(capabilitySelectors(t).length).toBeGreaterThan(0);
  });

  it('requires ready targets for the destructive types by default', () => {
    for (const t of BUILTIN_TEMPLATES) {
      expect(t.defaults?.requireReady).toBe(['Restore', 'Upgrade', 'Migration'].includes(t.type));
    }
  });
});

describe('template parameters', () => {
  it('velero-backup: defaults ttl and quiesce, refuses a non-Go duration', () => {
    expect(validateParameters(byName('velero-backup'), {})).toEqual({
      ok: true,
      parameters: { ttl: '720h', quiesce: 'none' },
    });
    expect(fieldErrors('velero-backup', { ttl: '7d' })[0]).toMatch(
      /^spec\.parameters\.ttl: Invalid value: "7d": .*Go duration/,
    );
    expect(fieldErrors('velero-backup', { quiesce: 'pause' })[0]).toContain(
      'supported values: "none", "exec"',
    );
  });

  it('velero-restore: backupName may be left to its sources; cluster-scoped objects are not offered', () => {
    // Without it: the parametersFrom default (latest Backup Operation), or with spec.source the newest
    // Backup made there (engines/velero.ts).
    expect(fieldErrors('velero-restore', {})).toEqual([]);
    expect(veleroRestore.parametersFrom).toEqual([
      { latest: { type: 'Backup', engine: 'velero' }, outputs: [{ output: 'backupName' }] },
    ]);
    expect(fieldErrors('velero-restore', { backupName: 'b', includeClusterResources: true })).toEqual([
      expect.stringMatching(/^spec\.parameters\.includeClusterResources: Forbidden: unknown field/),
    ]);
  });

  it('helm-upgrade: version is required and must be a semantic version', () => {
    expect(fieldErrors('helm-upgrade', {})[0]).toContain('spec.parameters.version: Required value');
    expect(fieldErrors('helm-upgrade', { version: 'latest' })[0]).toContain(
      'spec.parameters.version: Invalid value',
    );
    expect(validateParameters(byName('helm-upgrade'), { version: '6.7.0' })).toMatchObject({
      ok: true,
      parameters: { version: '6.7.0', timeout: '10m', serviceAccountName: 'vworkspace-runner' },
    });
  });

  it('job-runcommand: image from the allowlist, command a non-empty list of strings', () => {
    expect(
      fieldErrors('job-runcommand', { command: ['echo', 'hi'], image: 'evil.example.com/miner:1' })[0],
    ).toContain('spec.parameters.image: Unsupported value');
    expect(fieldErrors('job-runcommand', { command: ['echo', 42] })).toEqual([
      'spec.parameters.command[1]: Invalid value: 42: must be a string',
    ]);
    expect(fieldErrors('job-runcommand', { command: [] })[0]).toContain('must have at least 1 items');
    expect(validateParameters(byName('job-runcommand'), { command: ['true'] })).toMatchObject({
      ok: true,
      parameters: { image: RUNCOMMAND_IMAGES[0] },
    });
  });

  it('workflow-runbook: workflowTemplateRef.name is required; arguments are strings', () => {
    expect(fieldErrors('workflow-runbook', {})[0]).toContain(
      'spec.parameters.workflowTemplateRef: Required value',
    );
    expect(fieldErrors('workflow-runbook', { workflowTemplateRef: {} })[0]).toContain(
      'spec.parameters.workflowTemplateRef.name: Required value',
    );
    expect(
      fieldErrors('workflow-runbook', { workflowTemplateRef: { name: 'db' }, arguments: { n: 1 } }),
    ).toEqual(['spec.parameters.arguments.n: Invalid value: 1: must be a string']);
  });

  it('volsync templates require the repository Secret', () => {
    expect(fieldErrors('volsync-backup', {})[0]).toContain('spec.parameters.repository: Required value');
    expect(fieldErrors('volsync-restore', { repository: 'restic', restoreAsOf: 'yesterday' })[0]).toContain(
      'spec.parameters.restoreAsOf: Invalid value',
    );
  });
});
