// A velero Restore from spec.source (velero-restore.ts): the namespace's own backups after it was
// recreated, and another namespace's (a clone).
import { describe, expect, it } from 'vitest';
import { anInput, aVeleroBackup, builtinWith, materialized } from '../../../test/support/builders/engines.ts';
import { ANNOTATION_CREATED_BY } from '../api/annotations.ts';
import type { EngineEnvironment, MaterializeInput } from './types.ts';
import { veleroAdapter } from './velero.ts';

const JUDGED = { [ANNOTATION_CREATED_BY]: 'alice' };

function restore(
  source: string,
  o: {
    backup?: EngineEnvironment['veleroBackup'];
    parameters?: Record<string, unknown>;
    annotations?: Record<string, string>;
    allowClone?: boolean;
  } = {},
): MaterializeInput {
  const input = anInput({
    name: 'bring-back',
    namespace: 'team-a',
    type: 'Restore',
    engine: 'velero',
    parameters: o.parameters ?? {},
    annotations: o.annotations ?? JUDGED,
    ...(o.allowClone === false ? { template: builtinWith('Restore', 'velero', { allowClone: false }) } : {}),
    env: { veleroBackup: o.backup ?? aVeleroBackup('nightly-1', source) },
  });
  input.op.spec.source = { namespace: source };
  return input;
}

describe('velero Restore from spec.source', () => {
  it('its own namespace: the newest Backup the reconciler found, no namespace mapping', () => {
    const [r] = materialized(veleroAdapter.materialize(restore('team-a')));
    expect(r?.spec).toMatchObject({ backupName: 'nightly-1', includedNamespaces: ['team-a'] });
    expect(r?.spec).not.toHaveProperty('namespaceMapping');
    // Helm's release record too: it names this namespace.
    expect((r?.spec as { orLabelSelectors: unknown[] }).orLabelSelectors).toContainEqual({
      matchLabels: { owner: 'helm', name: 'nextcloud-team-a' },
    });
  });

  it("another namespace's: a clone, its objects mapped into the Operation's namespace", () => {
    const [r] = materialized(veleroAdapter.materialize(restore('team-prod')));
    expect(r?.spec).toMatchObject({
      backupName: 'nightly-1',
      includedNamespaces: ['team-prod'],
      namespaceMapping: { 'team-prod': 'team-a' },
    });
    // Without Helm's release record: it names the source namespace, where helm would apply an upgrade.
    expect((r?.spec as { orLabelSelectors: unknown[] }).orLabelSelectors).toEqual([
      { matchLabels: { 'app.kubernetes.io/instance': 'nextcloud-team-a' } },
      { matchLabels: { 'ops.vworkspace.io/release': 'nextcloud-team-a' } },
    ]);
  });

  it('a clone only through a template that allows it, and only once the webhook judged the requester', () => {
    const refused = veleroAdapter.materialize(restore('team-prod', { allowClone: false }));
    expect(refused).toMatchObject({ ok: false, reason: 'NotAllowedByTemplate' });
    if (!refused.ok) expect(refused.message).toMatch(/^spec\.source\.namespace: .*allowClone is not true/);
    const unjudged = veleroAdapter.materialize(restore('team-prod', { annotations: {} }));
    expect(unjudged).toMatchObject({ ok: false, reason: 'BackupNotAllowed' });
    if (!unjudged.ok) expect(unjudged.message).toContain('may clone ApplicationInstance nextcloud there');
  });

  it.each([
    ['made for another namespace than the source', aVeleroBackup('nightly-1', 'team-b')],
    [
      'of another instance (the clone check was on this one)',
      {
        ...aVeleroBackup('nightly-1', 'team-prod')!,
        labels: { ...aVeleroBackup('nightly-1', 'team-prod')!.labels, 'ops.vworkspace.io/instance': 'other' },
      },
    ],
  ])('refuses a named Backup %s', (_why, backup) => {
    const r = veleroAdapter.materialize(
      restore('team-prod', { backup, parameters: { backupName: 'nightly-1' } }),
    );
    expect(r).toMatchObject({ ok: false, reason: 'BackupNotAllowed' });
    if (!r.ok) expect(r.message).toContain('of ApplicationInstance nextcloud made for namespace team-prod');
  });

  it('records the instance and its restore capability on a Backup, for a restore once it is gone', () => {
    const input = anInput({
      type: 'Backup',
      engine: 'velero',
      instance: { annotations: { 'ops.vworkspace.io/restore': 'velero' } },
    });
    const [b] = materialized(veleroAdapter.materialize(input));
    expect(b?.metadata).toMatchObject({
      labels: { 'ops.vworkspace.io/instance': 'nextcloud', 'ops.vworkspace.io/release': 'nextcloud-team-a' },
      annotations: { 'ops.vworkspace.io/restore': 'velero' },
    });
  });
});
