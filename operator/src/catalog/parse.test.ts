import { describe, expect, it } from 'vitest';
import { aTemplate, catalogConfigMap } from '../../../test/support/builders/catalog.ts';
import { parseCatalog } from './parse.ts';

const nextcloud = {
  capabilities: { backup: 'velero', restore: 'velero', upgrade: 'helm' },
  chartAnnotations: false,
  maintenanceWindow: { schedule: '0 2 * * 6', duration: '4h', timeZone: 'Europe/Berlin' },
};

describe('parseCatalog', () => {
  it('loads applications and templates with their source', () => {
    const { catalog, problems } = parseCatalog([
      catalogConfigMap('base', { applications: { nextcloud }, templates: [aTemplate()] }),
    ]);
    expect(problems).toEqual([]);
    expect(catalog.applications.nextcloud).toEqual({
      ...nextcloud,
      source: 'configmap vworkspace-system/base',
    });
    expect(catalog.templates).toEqual([{ ...aTemplate(), source: 'configmap vworkspace-system/base' }]);
  });

  it('applies the entry defaults (chartAnnotations false)', () => {
    const { catalog } = parseCatalog([
      catalogConfigMap('a', { applications: { wordpress: { capabilities: { backup: 'velero' } } } }),
    ]);
    expect(catalog.applications.wordpress?.chartAnnotations).toBe(false);
  });

  it('skips a bad application entry, reports where and why, and loads the rest', () => {
    const { catalog, problems } = parseCatalog([
      catalogConfigMap('base', {
        applications: {
          nextcloud,
          wordpress: { capabilities: { backup: 'restic' } },
          gitea: { capabilities: { teleport: 'velero' } },
          Bad_Id: {},
        },
      }),
    ]);
    expect(Object.keys(catalog.applications)).toEqual(['nextcloud']);
    expect(problems).toEqual([
      {
        configMap: 'vworkspace-system/base',
        path: 'applications.wordpress',
        message: expect.stringContaining(
          'applications.wordpress.capabilities.backup: Unsupported value: "restic"',
        ),
      },
      {
        configMap: 'vworkspace-system/base',
        path: 'applications.gitea',
        message: expect.stringContaining(
          'applications.gitea.capabilities.teleport: Forbidden: unknown field',
        ),
      },
      {
        configMap: 'vworkspace-system/base',
        path: 'applications.Bad_Id',
        message: expect.stringContaining('DNS subdomain'),
      },
    ]);
  });

  it('skips bad templates with the path of the bad field and keeps the good ones', () => {
    const { catalog, problems } = parseCatalog([
      catalogConfigMap('base', {
        templates: [
          aTemplate({ name: 'good' }),
          aTemplate({ name: 'wrong-pair', type: 'Upgrade', engine: 'snapshot' }),
          aTemplate({
            name: 'bad-schema',
            inputSchema: { type: 'object', properties: { x: { type: 'strin' } } },
          }),
          aTemplate({
            name: 'bad-default',
            inputSchema: { type: 'object', properties: { n: { type: 'integer', default: 'x' } } },
          }),
          aTemplate({
            name: 'bad-precondition',
            preconditions: [{ name: 'RequiredSecretsPresent', parameter: 'nope' }],
          }),
          { ...aTemplate({ name: 'typo' }), rbacProfil: 'x' },
          { name: 'incomplete' },
          aTemplate({
            name: 'bad-label',
            targetSelectors: { labelSelector: { matchLabels: { 'no spaces': 'x' } } },
          }),
          aTemplate({
            name: 'good-label',
            targetSelectors: { labelSelector: { matchLabels: { 'app.kubernetes.io/tier': 'a' } } },
          }),
        ],
      }),
    ]);
    expect(catalog.templates.map((t) => t.name)).toEqual(['good', 'good-label']);
    expect(problems.map((p) => [p.path, p.message])).toEqual([
      [
        'templates[1].engine',
        'template (wrong-pair) skipped: engine snapshot cannot run Upgrade; it runs Backup, Restore, Verify',
      ],
      [
        'templates[2].inputSchema',
        expect.stringMatching(/^template \(bad-schema\) skipped: not a valid schema: /),
      ],
      [
        'templates[3].inputSchema',
        expect.stringContaining('a default does not satisfy the schema: spec.parameters.n'),
      ],
      [
        'templates[4].preconditions[0].parameter',
        'template (bad-precondition) skipped: inputSchema has no parameter nope',
      ],
      [
        'templates[5]',
        expect.stringContaining(
          'templates[5].rbacProfil: Forbidden: unknown field (did you mean rbacProfile?)',
        ),
      ],
      ['templates[6]', expect.stringContaining('templates[6].type: Required value')],
      ['templates[7]', expect.stringContaining('templates[7].targetSelectors.labelSelector.matchLabels')],
    ]);
  });

  it('keeps a ConfigMap with broken YAML from loading, but not the others', () => {
    const { catalog, problems } = parseCatalog([
      catalogConfigMap('a-broken', 'applications:\n  nextcloud: [unclosed\n'),
      catalogConfigMap('b-good', { applications: { nextcloud } }),
    ]);
    expect(Object.keys(catalog.applications)).toEqual(['nextcloud']);
    expect(problems).toEqual([
      {
        configMap: 'vworkspace-system/a-broken',
        path: '',
        message: expect.stringContaining('is not valid YAML'),
      },
    ]);
  });

  it('reports a missing catalog.yaml key, a wrong top-level shape and unknown keys', () => {
    const { problems } = parseCatalog([
      { metadata: { name: 'empty', namespace: 'ns' }, data: {} },
      catalogConfigMap('list', '- a\n- b\n'),
      catalogConfigMap('extra', { applicatons: {}, templates: 'x' }),
    ]);
    expect(problems.map((p) => `${p.configMap} ${p.path}`)).toEqual([
      'ns/empty ',
      'vworkspace-system/extra applicatons',
      'vworkspace-system/extra templates',
      'vworkspace-system/list ',
    ]);
  });

  it('lets the first ConfigMap in name order win a duplicate and reports the other', () => {
    const { catalog, problems } = parseCatalog([
      catalogConfigMap('b', {
        applications: { nextcloud: { capabilities: { backup: 'volsync' } } },
        templates: [aTemplate()],
      }),
      catalogConfigMap('a', {
        applications: { nextcloud },
        templates: [aTemplate({ description: 'first' })],
      }),
    ]);
    expect(catalog.applications.nextcloud?.capabilities).toEqual(nextcloud.capabilities);
    expect(catalog.templates.map((t) => t.description)).toEqual(['first']);
    expect(problems.map((p) => p.message)).toEqual([
      'entry skipped: nextcloud is already defined by configmap vworkspace-system/a',
      'template (custom-backup) skipped: custom-backup is already defined by configmap vworkspace-system/a',
    ]);
  });

  it('accepts disable entries and checks them with their own schema', () => {
    const { catalog, problems } = parseCatalog([
      catalogConfigMap('a', {
        templates: [
          { name: 'job-runcommand', disabled: true },
          { name: 'x', disabled: true, type: 'Backup' },
        ],
      }),
    ]);
    expect(catalog.templates).toEqual([
      { name: 'job-runcommand', disabled: true, source: 'configmap vworkspace-system/a' },
    ]);
    expect(problems[0]?.message).toContain('templates[1].type: Forbidden: unknown field');
  });

  it('asks the injected window check about maintenance windows', () => {
    const validateWindow = (w: { timeZone?: string }) =>
      w.timeZone === 'Mars/Olympus' ? 'unknown time zone Mars/Olympus' : undefined;
    const { catalog, problems } = parseCatalog(
      [
        catalogConfigMap('a', {
          applications: {
            nextcloud,
            gitea: { maintenanceWindow: { schedule: '@daily', duration: '1h', timeZone: 'Mars/Olympus' } },
          },
        }),
      ],
      { validateWindow },
    );
    expect(Object.keys(catalog.applications)).toEqual(['nextcloud']);
    expect(problems).toEqual([
      {
        configMap: 'vworkspace-system/a',
        path: 'applications.gitea.maintenanceWindow',
        message: 'entry skipped: unknown time zone Mars/Olympus',
      },
    ]);
  });

  it('refuses a malformed window without the injected check', () => {
    const { problems } = parseCatalog([
      catalogConfigMap('a', {
        applications: { gitea: { maintenanceWindow: { schedule: '0 2 * *', duration: '4 hours' } } },
      }),
    ]);
    expect(problems[0]?.message).toContain('applications.gitea.maintenanceWindow.schedule: Invalid value');
    expect(problems[0]?.message).toContain('applications.gitea.maintenanceWindow.duration: Invalid value');
  });
});
