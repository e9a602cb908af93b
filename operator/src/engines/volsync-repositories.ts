// Which restic repository each claim of a volsync Backup or Restore uses. VolSync's restic mover tells
// snapshots apart only by time: every backup is `restic backup --host volsync .` of the claim mounted at
// /data, and a restore takes the newest snapshot of the repository (or the one restoreAsOf / previous
// select), whichever claim it came from; `forget` of a retain policy runs over the whole repository too.
// Claims sharing one repository would restore each other's data, so each claim needs its own: the
// repository Secret (its RESTIC_REPOSITORY) is per claim. Pure.
import { isRecord, str } from './object.ts';

export type ClaimRepositories =
  | { ok: true; byClaim: ReadonlyMap<string, string> }
  | { ok: false; reason: 'InvalidParameters'; message: string };

/**
 * parameters.repository as a restic repository Secret per claim: a Secret name serves the release's only
 * claim; a map (claim → Secret) must name every claim and only those, each with a Secret of its own.
 */
export function claimRepositories(repository: unknown, claims: readonly string[]): ClaimRepositories {
  const invalid = (message: string) => ({
    ok: false as const,
    reason: 'InvalidParameters' as const,
    message,
  });
  const perClaim = (cs: readonly string[]) => `{${cs.map((c) => `${c}: <Secret>`).join(', ')}}`;
  const single = str(repository);
  if (single !== undefined) {
    if (claims.length === 1) return { ok: true, byClaim: new Map([[claims[0] as string, single]]) };
    return invalid(
      `the release has ${claims.length} claims (${claims.join(', ')}) and parameters.repository names one restic repository Secret (${single}) for all: VolSync's restic mover tells a repository's snapshots apart only by time, so a Restore would give one claim another's data; give each claim its own repository (a Secret whose RESTIC_REPOSITORY is a path of its own): parameters.repository: ${perClaim(claims)}`,
    );
  }
  if (!isRecord(repository)) {
    return invalid(
      'parameters.repository must name the restic repository Secret, or map each claim to its own',
    );
  }
  const unknown = Object.keys(repository).filter((c) => !claims.includes(c));
  if (unknown.length > 0) {
    return invalid(
      `parameters.repository names ${unknown.join(', ')}, not a claim of the release (its claims: ${claims.join(', ')})`,
    );
  }
  const missing = claims.filter((c) => str(repository[c]) === undefined);
  if (missing.length > 0) {
    return invalid(
      `parameters.repository has no restic repository Secret for claim(s) ${missing.join(', ')}; name one per claim: ${perClaim(claims)}`,
    );
  }
  const byClaim = new Map(claims.map((c) => [c, str(repository[c]) as string]));
  const claimsOf = new Map<string, string[]>();
  for (const [claim, secret] of byClaim) claimsOf.set(secret, [...(claimsOf.get(secret) ?? []), claim]);
  const shared = [...claimsOf].find(([, cs]) => cs.length > 1);
  if (shared) {
    return invalid(
      `claims ${shared[1].join(', ')} would share the restic repository Secret ${shared[0]}: VolSync's restic mover tells a repository's snapshots apart only by time, so a Restore would give one claim another's data; give each claim a Secret of its own (with its own RESTIC_REPOSITORY path)`,
    );
  }
  return { ok: true, byClaim };
}
