// A volsync Operation acts on a backup repository with credentials from a Secret of the namespace: a drill
// reads it and its probe prints what it finds into the Operation's status (ADR 0060), a Restore reads it
// into the requester's instance, a Backup writes to it and, with `retain`, makes VolSync forget its
// snapshots. A requester who may not read that Secret must do none of that through the operator, so every
// volsync Operation naming repository Secrets needs, for the requester, get on each of them. Pure.
import type { Template } from '../catalog/index.ts';
import { type AccessCheck, isRecord } from './decision.ts';
import type { OperationSpecView } from './spec-view.ts';

/** The Secrets a parameters.repository value names: one name, or a map claim → Secret. Sorted, each once. */
export function repositorySecrets(repository: unknown): string[] {
  if (typeof repository === 'string') return [repository];
  if (!isRecord(repository)) return [];
  return [...new Set(Object.values(repository).filter((v): v is string => typeof v === 'string'))].sort();
}

/** The reviews a volsync parameters.repository needs: get on each Secret it names, reported at its path. */
export function repositoryAccess(
  view: OperationSpecView,
  template: Template,
  base: string,
): { check: AccessCheck; field: string; why: string }[] {
  if (template.engine !== 'volsync') return [];
  const repository = view.parameters?.repository;
  return repositorySecrets(repository).map((name) => {
    const claim = isRecord(repository) && Object.entries(repository).find(([, v]) => v === name)?.[0];
    return {
      check: { verb: 'get', resource: 'secrets', name },
      field: `${base}.parameters.repository${claim ? `[${claim}]` : ''}`,
      why:
        template.type === 'Verify'
          ? `a restore drill reading the backup repository of Secret ${name} (its probe reports what it finds)`
          : `a ${template.type} using the backup repository of Secret ${name}`,
    };
  });
}
