import { describe, expect, it } from 'vitest';
import { aTemplate } from '../../../test/support/builders/catalog.ts';
import { type Catalog, emptyCatalog } from './catalog-schema.ts';
import { mergeTemplates } from './merge.ts';
import { resolveTemplate } from './resolve.ts';
import { BUILTIN_TEMPLATES } from './templates/index.ts';

function catalogWith(...templates: Catalog['templates']): Catalog {
  return { ...emptyCatalog(), templates };
}
const src = 'configmap ops/catalog';

describe('mergeTemplates', () => {
  it('returns the built-ins, marked builtin, when the catalog is empty', () => {
    const merged = mergeTemplates(BUILTIN_TEMPLATES, emptyCatalog());
    expect(merged.map((t) => t.name)).toEqual(BUILTIN_TEMPLATES.map((t) => t.name).sort());
    expect(new Set(merged.map((t) => t.source))).toEqual(new Set(['builtin']));
  });

  it('extends with new names, replaces same names and removes disabled ones', () => {
    const replacement = {
      ...aTemplate({ name: 'velero-backup', type: 'Backup', engine: 'velero', rbacProfile: 'backup.velero' }),
      source: src,
    };
    const merged = mergeTemplates(
      BUILTIN_TEMPLATES,
      catalogWith({ ...aTemplate({ name: 'db-dump' }), source: src }, replacement, {
        name: 'job-runcommand',
        disabled: true,
        source: src,
      }),
    );
    const names = merged.map((t) => t.name);
    expect(names).toContain('db-dump');
    expect(names).not.toContain('job-runcommand');
    expect(merged.find((t) => t.name === 'velero-backup')).toBe(replacement);
    expect(merged).toHaveLength(BUILTIN_TEMPLATES.length);
  });

  it('applies several catalogs in order: a later one can disable what an earlier one added', () => {
    const merged = mergeTemplates(BUILTIN_TEMPLATES, [
      catalogWith({ ...aTemplate({ name: 'db-dump' }), source: src }),
      catalogWith({ name: 'db-dump', disabled: true, source: src }),
    ]);
    expect(merged.map((t) => t.name)).not.toContain('db-dump');
  });
});

describe('resolveTemplate', () => {
  const templates = mergeTemplates(
    BUILTIN_TEMPLATES,
    catalogWith({
      ...aTemplate({ name: 'velero-backup-long', engine: 'velero', rbacProfile: 'backup.velero' }),
      source: src,
    }),
  );

  it('finds the one template of a type/engine pair', () => {
    const r = resolveTemplate(templates, { type: 'Upgrade', engine: 'helm' });
    expect(r.ok && r.template.name).toBe('helm-upgrade');
  });

  it('prefers the built-in name when the catalog adds another template for the pair', () => {
    const r = resolveTemplate({ templates }, { type: 'Backup', engine: 'velero' });
    expect(r.ok && r.template.name).toBe('velero-backup');
  });

  it('asks for spec.template when several catalog templates share a pair and none is the built-in one', () => {
    const both = mergeTemplates(
      [],
      catalogWith({ ...aTemplate({ name: 'a' }), source: src }, { ...aTemplate({ name: 'b' }), source: src }),
    );
    expect(resolveTemplate(both, { type: 'Backup', engine: 'workflow' })).toEqual({
      ok: false,
      reason: 'TemplateNotFound',
      message:
        'several templates run Backup/workflow: a (Backup/workflow), b (Backup/workflow); set spec.template to choose one',
    });
  });

  it('uses spec.template when set, and refuses one for another pair', () => {
    const r = resolveTemplate(templates, {
      template: 'velero-backup-long',
      type: 'Backup',
      engine: 'velero',
    });
    expect(r.ok && r.template.name).toBe('velero-backup-long');
    const wrong = resolveTemplate(templates, { template: 'helm-upgrade', type: 'Backup', engine: 'velero' });
    expect(wrong).toMatchObject({ ok: false, reason: 'TemplateNotFound' });
    expect(!wrong.ok && wrong.message).toContain('helm-upgrade runs Upgrade/helm, not Backup/velero');
  });

  it('reports a missing or disabled template with the alternatives', () => {
    const noRunCommand = mergeTemplates(
      BUILTIN_TEMPLATES,
      catalogWith({ name: 'job-runcommand', disabled: true, source: src }),
    );
    const r = resolveTemplate(noRunCommand, { type: 'RunCommand', engine: 'job' });
    expect(r).toEqual({
      ok: false,
      reason: 'TemplateNotFound',
      message: 'no template runs RunCommand/job; templates for RunCommand: (none)',
    });
    const named = resolveTemplate(templates, { template: 'nope', type: 'Restore', engine: 'velero' });
    expect(!named.ok && named.message).toBe(
      'template nope does not exist or is disabled in the catalog; templates for Restore/velero: velero-restore (Restore/velero)',
    );
  });
});
