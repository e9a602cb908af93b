import { describe, expect, it } from 'vitest';
import { allowedServiceAccounts, grantDenials } from './grants.ts';
import { validateParameters } from './parameters.ts';
import type { Template } from './template.ts';
import { BUILTIN_TEMPLATES } from './templates/index.ts';

const byName = (name: string): Template => {
  const t = BUILTIN_TEMPLATES.find((x) => x.name === name);
  if (!t) throw new Error(name);
  return t;
};

describe('template grants', () => {
  it('allows only the runner ServiceAccount by default, and every built-in default is allowed', () => {
    expect(allowedServiceAccounts(byName('job-runcommand'))).toEqual(['vworkspace-runner']);
    for (const t of BUILTIN_TEMPLATES) {
      const params = validateParameters(t, t.name === 'velero-restore' ? { backupName: 'b' } : {});
      const defaults = params.ok ? params.parameters : {};
      expect(grantDenials(t, defaults).filter((d) => d.serviceAccount)).toEqual([]);
    }
  });

  it('denies a ServiceAccount outside the list, naming the list and who may add to it', () => {
    const [d] = grantDenials(byName('job-runcommand'), { serviceAccountName: 'admin' });
    expect(d).toMatchObject({ parameter: 'serviceAccountName', serviceAccount: 'admin' });
    expect(d?.message).toContain('allowedServiceAccounts: vworkspace-runner');
    const wider = { ...byName('job-runcommand'), allowedServiceAccounts: ['vworkspace-runner', 'admin'] };
    expect(grantDenials(wider, { serviceAccountName: 'admin' })).toEqual([]);
  });

  it('keeps ClusterWorkflowTemplates and cluster-scoped backups and restores to templates that allow them', () => {
    const runbook = byName('workflow-runbook');
    const ref = { workflowTemplateRef: { name: 'x', clusterScope: true } };
    expect(grantDenials(runbook, ref).map((d) => d.parameter)).toEqual(['workflowTemplateRef.clusterScope']);
    expect(grantDenials({ ...runbook, allowClusterWorkflowTemplates: true }, ref)).toEqual([]);
    expect(grantDenials(runbook, { workflowTemplateRef: { name: 'x', clusterScope: false } })).toEqual([]);

    const restore = byName('velero-restore');
    const ask = { backupName: 'b', includeClusterResources: true };
    expect(grantDenials(restore, ask).map((d) => d.parameter)).toEqual(['includeClusterResources']);
    expect(grantDenials({ ...restore, allowClusterResources: true }, ask)).toEqual([]);
    // A Backup writes nothing into the cluster, but cluster-scoped objects carrying the release's label may
    // be another namespace's, copied to a storage location the requester chose (ADR 0028).
    const backup = byName('velero-backup');
    const denied = grantDenials(backup, { includeClusterResources: true });
    expect(denied.map((d) => d.parameter)).toEqual(['includeClusterResources']);
    expect(denied[0]?.message).toContain('does not allow backing up cluster-scoped objects');
    expect(
      grantDenials({ ...backup, allowClusterResources: true }, { includeClusterResources: true }),
    ).toEqual([]);
    expect(grantDenials(backup, { includeClusterResources: false })).toEqual([]);
  });
});
