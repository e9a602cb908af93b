import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const SCRIPT = join(import.meta.dirname, 'test-summary.ts');

/** A vitest JSON report with these files: [name, file status, assertion statuses]. */
function report(files: [string, string, string[]][]) {
  const all = files.flatMap(([, , a]) => a);
  return {
    numPassedTests: all.filter((s) => s === 'passed').length,
    numFailedTests: all.filter((s) => s === 'failed').length,
    numPendingTests: all.filter((s) => s === 'skipped').length,
    numTodoTests: 0,
    numFailedTestSuites: files.filter(([, st]) => st === 'failed').length,
    testResults: files.map(([name, status, a]) => ({
      name,
      status,
      message: status === 'failed' ? 'beforeAll: the node did not start' : '',
      assertionResults: a.map((s, i) => ({
        fullName: `${name} test ${i}`,
        status: s,
        failureMessages: ['boom'],
      })),
    })),
  };
}

describe('test-summary', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const summarize = (reports: Record<string, unknown>, ...args: string[]) => {
    const dir = mkdtempSync(join(tmpdir(), 'vws-summary-'));
    dirs.push(dir);
    for (const [n, r] of Object.entries(reports)) writeFileSync(join(dir, `${n}.json`), JSON.stringify(r));
    const r = spawnSync(process.execPath, [SCRIPT, dir, ...args], { encoding: 'utf8' });
    return { status: r.status, last: r.stdout.trim().split('\n').at(-1), out: r.stdout };
  };

  it('counts a file whose beforeAll failed as a failure even when another file has failed tests', () => {
    const r = summarize(
      {
        'e2e-node': report([
          ['a.test.ts', 'failed', ['skipped', 'skipped']],
          ['b.test.ts', 'failed', ['passed', 'failed']],
        ]),
        unit: report([['c.test.ts', 'passed', ['passed', 'passed']]]),
      },
      '2',
      '0',
    );
    expect(r.last).toBe('5 passed, 2 failed, 2 skipped');
    expect(r.status).toBe(1);
    expect(r.out).toContain('FAILED a.test.ts: beforeAll: the node did not start');
  });

  it("shows the message lines under a file's first real failure, without stack frames or follow-on failures", () => {
    const r = report([['j.test.ts', 'failed', ['failed', 'failed']]]);
    const [first, second] = r.testResults[0]?.assertionResults ?? [];
    if (!first || !second) throw new Error('builder gave no assertions');
    first.failureMessages = [
      'Error: operator exited (code 1) before ready; log /tmp/x.log:\n{"msg":"listen EADDRINUSE"}\n    at waitReady (x.ts:1:1)',
    ];
    second.failureMessages = ['Error: not run: an earlier step of this journey failed\nnoise'];
    const out = summarize({ e2e: r }, '0', '0').out;
    expect(out).toContain('      | {"msg":"listen EADDRINUSE"}');
    expect(out).not.toContain('at waitReady');
    expect(out).not.toContain('| noise');
  });

  it('counts a failed tool stage once and exits non-zero; all green exits 0', () => {
    const green = { unit: report([['c.test.ts', 'passed', ['passed']]]) };
    expect(summarize(green, '1', '0', 'tools (engines)')).toMatchObject({
      last: '2 passed, 1 failed',
      status: 1,
    });
    expect(summarize(green, '1', '0')).toMatchObject({ last: '2 passed, 0 failed', status: 0 });
  });
});
