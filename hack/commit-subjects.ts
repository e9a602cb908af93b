// Commit subjects say what a commit does in at most 72 characters; the details go in the body (git's
// own convention: `git log --oneline`, `git shortlog` and e-mail subjects cut longer ones). Checked by
// `make test` for every commit after BASELINE (the history before it is left as it was written) and
// before each commit by hack/hooks/commit-msg.
//
//   node hack/commit-subjects.ts            the commits after BASELINE on HEAD
//   node hack/commit-subjects.ts --message <file>   one commit message (the hook)
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

export const MAX_SUBJECT = 72;
/** The last commit whose subject is not checked. */
export const BASELINE = '02a682352d6b';

/** A message's subject: its first line that is not a comment (git strips `#` lines). */
export function subjectOf(message: string): string {
  return message.split('\n').find((l) => !l.startsWith('#')) ?? '';
}

/** Characters, not bytes or UTF-16 units: "→" counts one. */
export function tooLong(subject: string, max = MAX_SUBJECT): boolean {
  return [...subject].length > max;
}

export interface Commit {
  hash: string;
  subject: string;
}

/**
 * The commits of `log` (newest first) after the baseline whose subjects are too long. A history cut
 * before the baseline (a shallow clone) is checked whole.
 */
export function longSubjects(log: readonly Commit[], baseline = BASELINE): Commit[] {
  const end = log.findIndex((c) => c.hash.startsWith(baseline));
  return (end < 0 ? log : log.slice(0, end)).filter((c) => tooLong(c.subject));
}

function gitLog(): Commit[] {
  const out = execFileSync('git', ['log', '--format=%H%x09%s', 'HEAD'], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const tab = l.indexOf('\t');
      return { hash: l.slice(0, tab), subject: l.slice(tab + 1) };
    });
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { message: { type: 'string' } } });
  if (values.message) {
    const subject = subjectOf(readFileSync(values.message, 'utf8'));
    if (tooLong(subject)) {
      console.error(
        `commit subject is ${[...subject].length} characters, more than ${MAX_SUBJECT}: say what the commit does in the subject, the details in the body`,
      );
      process.exit(1);
    }
  } else {
    const long = longSubjects(gitLog());
    for (const c of long)
      console.error(`${c.hash.slice(0, 12)} subject of ${[...c.subject].length} characters: ${c.subject}`);
    if (long.length > 0) {
      console.error(
        `${long.length} commit subject(s) longer than ${MAX_SUBJECT} characters after ${BASELINE}: reword them (git rebase -i, reword) with the details in the body`,
      );
      process.exit(1);
    }
    console.log(`commit subjects after ${BASELINE}: all at most ${MAX_SUBJECT} characters`);
  }
}
