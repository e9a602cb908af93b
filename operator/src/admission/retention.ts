// Admission of a CronOperation's spec.retention (docs/retention.md, ADR 0053). Pure.
//
// The policy: each field under its path (retentionPolicyProblems: negative or fractional counts, a maxAge
// that is no positive Go duration), only on a Backup, only on engine velero or snapshot (volsync's restic
// forget runs inside VolSync's mover with its own `retain`, which cannot keep the newest verified backup
// nor one a Restore reads: parameters.retain is the way there).
//
// The authority (ADR 0011: what runs is what was checked at create and edit): the operator deletes with
// its own identity, so without a check anyone who may schedule a Backup would delete backups through it.
// The requester must be allowed to do what the operator will do for them: `create deletebackuprequests`
// (velero.io) in Velero's namespace, or `delete volumesnapshots` (snapshot.storage.k8s.io) in the
// CronOperation's namespace. The review carries the request's whole userInfo (groups too).
import { DEFAULT_VELERO_NAMESPACE, RETENTION_ENGINES } from '../api/index.ts';
import { type RetentionPolicy, retentionPolicyProblems } from '../schedule/retention.ts';
import { type AccessCheck, type Facts, invalid, isRecord, type Problem } from './decision.ts';
import { checkAccess } from './spec-checks.ts';

const FIELD = 'spec.retention';

function templateOf(spec: Record<string, unknown>): { type?: unknown; engine?: unknown } {
  const t = isRecord(spec.operationTemplate) ? spec.operationTemplate.spec : undefined;
  return isRecord(t) ? t : {};
}

/** The review spec.retention needs of its requester; none without a retention on a retention engine. */
export function retentionAccess(spec: unknown, facts: Pick<Facts, 'veleroNamespace'>): AccessCheck[] {
  if (!isRecord(spec) || spec.retention === undefined) return [];
  const { engine } = templateOf(spec);
  if (engine === 'velero')
    return [
      {
        verb: 'create',
        resource: 'deletebackuprequests',
        namespace: facts.veleroNamespace ?? DEFAULT_VELERO_NAMESPACE,
      },
    ];
  if (engine === 'snapshot') return [{ verb: 'delete', resource: 'volumesnapshots' }];
  return [];
}

/** What is wrong with spec.retention, each problem at its field. */
export function retentionProblems(spec: unknown): Problem[] {
  if (!isRecord(spec) || spec.retention === undefined) return [];
  if (!isRecord(spec.retention))
    return [invalid(FIELD, 'Invalid value: must be an object such as {keepLast: 7, maxAge: "720h"}')];
  const problems = retentionPolicyProblems(spec.retention as RetentionPolicy, FIELD).map((p) => {
    const at = p.indexOf(': ');
    return invalid(p.slice(0, at), `Invalid value: ${p.slice(at + 2)}`);
  });
  const { type, engine } = templateOf(spec);
  if (type !== 'Backup')
    problems.push(
      invalid(
        FIELD,
        `Forbidden: retention deletes the backups the CronOperation makes, and this one runs ${String(type)}; remove spec.retention or make operationTemplate.spec.type Backup`,
        'FieldValueForbidden',
      ),
    );
  else if (!(RETENTION_ENGINES as readonly unknown[]).includes(engine))
    problems.push(
      invalid(
        FIELD,
        engine === 'volsync'
          ? "Forbidden: volsync's restic snapshots are forgotten by VolSync's own mover, which cannot keep the newest verified backup nor one a Restore reads; set the retention as the template's parameters.retain (restic forget) and remove spec.retention"
          : `Forbidden: retention deletes backups through the velero or snapshot engine, not ${String(engine)}; remove spec.retention`,
        'FieldValueForbidden',
      ),
    );
  return problems;
}

/** The requester may delete those backups themselves; otherwise the webhook refuses, saying what to grant. */
export function checkRetentionAccess(
  spec: unknown,
  user: string,
  namespace: string,
  facts: Pick<Facts, 'access' | 'veleroNamespace'>,
): Problem[] {
  return retentionAccess(spec, facts).flatMap((check) =>
    checkAccess(
      check,
      user,
      namespace,
      FIELD,
      `spec.retention makes the operator delete backups on your behalf (${check.resource === 'deletebackuprequests' ? 'a DeleteBackupRequest per velero Backup, which deletes its files' : 'the VolumeSnapshots'}), which`,
      facts,
    ),
  );
}
