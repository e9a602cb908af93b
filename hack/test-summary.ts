// Sums vitest JSON reports and the static checks into the closing line CI reads:
// "N passed, N failed[, N skipped]" alone on the last line. Exits 1 when anything failed,
// when a stage failed without a report, or when no test ran at all.
//   node hack/test-summary.ts RESULTS_DIR CHECKS_PASSED CHECKS_FAILED [FAILED_STAGE...]
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface VitestJson {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  numFailedTestSuites: number;
  testResults?: {
    name: string;
    status: string;
    message?: string;
    assertionResults?: { fullName: string; status: string; failureMessages?: string[] }[];
  }[];
}

// One line per failure (file, test, first line of the error), so the tail of a CI log that shows
// only the last lines still names what broke. The first failure of each file also shows the lines
// that follow in its message (an operator's log tail, a diff), up to DETAIL_LINES: the test's work
// directory is gone with CI's clone, and these lines are often all that says why.
const DETAIL_LINES = 30;
const FOLLOW_ON = 'not run: an earlier step';
function failures(r: VitestJson, root: string): string[] {
  const out: string[] = [];
  for (const f of r.testResults ?? []) {
    const file = f.name.startsWith(root) ? f.name.slice(root.length + 1) : f.name;
    const failedTests = (f.assertionResults ?? []).filter((a) => a.status === 'failed');
    let detailed = false;
    for (const a of failedTests) {
      const [first = '', ...more] = (a.failureMessages?.[0] ?? '').split('\n');
      out.push(`  FAILED ${file} > ${a.fullName}: ${first.slice(0, 200)}`);
      if (detailed || first.includes(FOLLOW_ON)) continue;
      detailed = true;
      // The message's own lines, not vitest's stack frames under them.
      const body = more.filter((l) => !/^\s+at /.test(l) && l.trim() !== '').slice(0, DETAIL_LINES);
      for (const l of body) out.push(`      | ${l.slice(0, 300)}`);
    }
    if (failedTests.length === 0 && f.status === 'failed') {
      out.push(`  FAILED ${file}: ${(f.message ?? '').split('\n')[0]?.slice(0, 200) ?? ''}`);
    }
  }
  return out;
}

const [dir = '.', checksPassed = '0', checksFailed = '0', ...failedStages] = process.argv.slice(2);
let passed = Number(checksPassed);
let failed = Number(checksFailed);
let skipped = 0;
const lines: string[] = [];
const failedLines: string[] = [];
for (const file of existsSync(dir) ? readdirSync(dir).sort() : []) {
  if (!file.endsWith('.json')) continue;
  const r = JSON.parse(readFileSync(join(dir, file), 'utf8')) as VitestJson;
  passed += r.numPassedTests;
  // A file that failed without a failed test (it did not load, or its beforeAll threw and its tests were
  // skipped) counts as one failure of its own.
  const failedFiles = (r.testResults ?? []).filter(
    (f) => f.status === 'failed' && !(f.assertionResults ?? []).some((a) => a.status === 'failed'),
  ).length;
  failed +=
    r.numFailedTests + (r.testResults ? failedFiles : r.numFailedTests === 0 ? r.numFailedTestSuites : 0);
  skipped += r.numPendingTests + r.numTodoTests;
  lines.push(
    `  ${file.replace('.json', '').padEnd(12)} ${r.numPassedTests} passed, ${r.numFailedTests} failed`,
  );
  failedLines.push(...failures(r, process.cwd()));
}
if (failedLines.length > 0) process.stdout.write(`failed tests:\n${failedLines.join('\n')}\n`);
process.stdout.write(`${lines.join('\n')}\n`);
if (failedStages.length > 0) process.stdout.write(`failed stages: ${failedStages.join('; ')}\n`);
// A stage that failed without any failing test to show for it (a crashed runner, a tool build)
// still fails the run and is counted once so the totals never read as green.
const unaccounted = failedStages.filter((s) => s.startsWith('tools')).length;
failed += unaccounted;
const total = `${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`;
process.stdout.write(`${total}\n`);
process.exit(failed > 0 || failedStages.length > 0 || passed === 0 ? 1 : 0);
