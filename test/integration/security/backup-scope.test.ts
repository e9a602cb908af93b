// Issue 28, decided (ADR 0028): a velero Backup is scoped to the Operation's namespace and the release's
// label, but `includeClusterResources: true` made Velero also copy every cluster-scoped object carrying
// that label, whichever namespace's release put it there, into a backup the tenant may later restore.
// As for restores (threat model item 4), cluster-scoped objects are only for templates a platform admin
// wrote with allowClusterResources: true; the built-in velero-backup refuses the parameter at its field.
// An Operation the webhook never judged runs nothing at all (NotAdmitted, ADR 0029); the engine's own
// refusal of the parameter, behind that, is a unit of logic (operator/src/catalog/grants.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorld, type World } from './harness.ts';
import { childrenOf, instanceWithReady, settled, unselected } from './support.ts';

const backup = (parameters: Record<string, unknown>) => ({
  type: 'Backup',
  engine: 'velero',
  targetRef: { name: 'shop' },
  parameters,
});

describe('a tenant backs up only namespaced objects through the built-in template', () => {
  let w: World;
  let ns: string;
  let backups: string;

  beforeAll(async () => {
    w = await startWorld();
    ns = w.namespaces[0];
    backups = `/apis/velero.io/v1/namespaces/${w.veleroNamespace}/backups`;
    await w.instance(ns, 'shop', { backup: 'velero' });
    await w.grantProfile('backup.velero', ns);
    await w.grant('mallory', ns, [
      { apiGroups: ['ops.vworkspace.io'], resources: ['operations'], verbs: ['create', 'get'] },
      { apiGroups: ['apps.vworkspace.io'], resources: ['applicationinstances'], verbs: ['backup'] },
    ]);
    // Seen by the operator (and the grant by the API server's authorizer) before any Operation names it.
    await instanceWithReady(w, ns, 'shop', 'ReleaseNotFound');
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('refuses includeClusterResources: true at spec.parameters.includeClusterResources', async () => {
    const d = await w.denial(
      w.operation(w.as('mallory'), ns, 'with-cluster', backup({ includeClusterResources: true })),
    );
    expect(d.causes.map((c) => c.field)).toEqual(['spec.parameters.includeClusterResources']);
    expect(d.message).toContain('allowClusterResources');
  });

  it('runs nothing for an Operation the webhook never judged, creating no Backup', async () => {
    await unselected(w, ns, () =>
      w.operation(w.admin, ns, 'unjudged', backup({ includeClusterResources: true })),
    );
    const out = await settled(w, ns, 'unjudged');
    expect(out.op.status?.phase).toBe('Failed');
    expect(out.accepted).toMatchObject({ status: 'False', reason: 'NotAdmitted' });
    expect(await childrenOf(w, backups, 'unjudged')).toEqual([]);
  });

  it('still backs up the release with includeClusterResources: false or unset', async () => {
    await w.operation(w.as('mallory'), ns, 'plain', backup({ includeClusterResources: false }));
    await settled(w, ns, 'plain');
    const [b] = await childrenOf(w, backups, 'plain');
    expect((b as { spec?: Record<string, unknown> } | undefined)?.spec).toMatchObject({
      includedNamespaces: [ns],
      includeClusterResources: false,
    });
  });
});
