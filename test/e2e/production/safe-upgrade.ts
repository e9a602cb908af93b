// Safe Upgrade on the real node (issue 24 item 2, ADR 0055): the platform admin's catalog entry for the
// database — a helm Upgrade with a pre-upgrade snapshot backup, a post-check that reads what the application
// reads (psql), and restoreOnFailure, since its migrations change data.
import YAML from 'yaml';
import { OPERATORS_NAMESPACE } from '../../../hack/lib/olm.ts';
import { apply } from '../../../hack/lib/real-node.ts';
import { LABEL_CATALOG } from '../../../operator/src/api/annotations.ts';
import type { Template } from '../../../operator/src/catalog/template.ts';
import { helmUpgrade } from '../../../operator/src/catalog/templates/helm-upgrade.ts';
import type { Journey } from './journey.ts';

export const SAFE_UPGRADE_TEMPLATE = 'postgres-safe-upgrade';

/**
 * The post-check: the query the application runs (an audit row's reason), through the Service with the
 * release's password, as any client. It fails once a migration renamed the column.
 */
export function auditCheck(release: string, password: string): string[] {
  const host = `${release}-postgres`;
  return [
    'sh',
    '-c',
    [
      `for i in $(seq 60); do pg_isready -q -h ${host} && break; sleep 2; done`,
      `PGPASSWORD='${password}' psql -X -At -v ON_ERROR_STOP=1 -h ${host} -U postgres -c "SELECT 'audit rows: ' || count(reason) FROM accounts_audit"`,
    ].join('; '),
  ];
}

/** Loads the catalog entry; the caller retries its first Operation until the webhook knows the template. */
export async function installSafeUpgradeTemplate(j: Journey, check: string[]): Promise<void> {
  const template: Template = {
    ...helmUpgrade,
    name: SAFE_UPGRADE_TEMPLATE,
    description:
      'helm upgrade of the PostgreSQL release, snapshot before, audit query after, restore on failure',
    rbacProfile: 'safeUpgrade.helm',
    safety: {
      backup: { engine: 'snapshot' },
      postCheck: { image: j.postgresImage, command: check },
      restoreOnFailure: true,
    },
  };
  await apply(j.node.client, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'safe-upgrades', namespace: OPERATORS_NAMESPACE, labels: { [LABEL_CATALOG]: 'true' } },
    data: { 'catalog.yaml': YAML.stringify({ templates: [template] }) },
  });
}
