// The tools packaging runs (bin/opm, bin/operator-sdk, bin/promtool, bin/crane, bin/skopeo), and the parsing of their output. A
// missing tool is an error that says how to build it: the packaging checks never pass by not running.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export type Tool = 'opm' | 'operator-sdk' | 'promtool' | 'crane' | 'skopeo';

export interface ToolRun {
  code: number;
  stdout: string;
  stderr: string;
}

export function toolPath(root: string, tool: Tool): string {
  const path = join(root, 'bin', tool);
  if (!existsSync(path))
    throw new Error(
      `${path} is missing: run \`make tools\` (or hack/build-tools.sh ${tool === 'crane' || tool === 'skopeo' ? 'images' : 'olm'}) to build it`,
    );
  return path;
}

export function runTool(
  root: string,
  tool: Tool,
  args: readonly string[],
  env: Record<string, string> = {},
): ToolRun {
  const r = spawnSync(toolPath(root, tool), args, {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    // operator-sdk reads the working directory's PROJECT file when present; none here.
    env: { ...process.env, NO_COLOR: '1', ...env },
  });
  if (r.error) throw r.error;
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

export interface Finding {
  level: 'error' | 'warning';
  message: string;
}

/**
 * Problems in a `operator-sdk bundle validate -o json-alpha1` run: the JSON report's outputs and any
 * logrus line at warning level or above on stderr (some validators only log).
 */
export function sdkFindings(run: ToolRun): Finding[] {
  const findings: Finding[] = [];
  const start = run.stdout.indexOf('{');
  if (start < 0) {
    findings.push({ level: 'error', message: `no JSON report on stdout: ${run.stdout}${run.stderr}`.trim() });
  } else {
    const report = JSON.parse(run.stdout.slice(start)) as {
      passed?: boolean;
      outputs?: { type?: string; message?: string }[] | null;
    };
    for (const o of report.outputs ?? []) {
      findings.push({
        level: o.type === 'warning' ? 'warning' : 'error',
        message: o.message ?? JSON.stringify(o),
      });
    }
    if (report.passed !== true && findings.length === 0)
      findings.push({ level: 'error', message: 'report says passed: false' });
  }
  findings.push(...logFindings(run.stderr));
  if (run.code !== 0 && findings.length === 0)
    findings.push({ level: 'error', message: `exit code ${run.code}: ${run.stderr}`.trim() });
  return findings;
}

/** logrus `level=warning|error|fatal` lines, and plain lines that say WARN/ERROR (opm's own logging). */
export function logFindings(text: string): Finding[] {
  const out: Finding[] = [];
  for (const line of text.split('\n')) {
    const m =
      /level=(warning|warn|error|fatal)\b/.exec(line) ?? /^\s*(WARN|WARNING|ERRO|ERROR|FATA)\b/i.exec(line);
    if (!m) continue;
    const level = m[1]!.toLowerCase().startsWith('warn') ? 'warning' : 'error';
    out.push({ level, message: line.trim() });
  }
  return out;
}

/** `opm validate DIR`: success is exit 0 with nothing at warning level or above on either stream. */
export function opmValidateFindings(run: ToolRun): Finding[] {
  const findings = [...logFindings(run.stderr), ...logFindings(run.stdout)];
  if (run.code !== 0)
    findings.push({ level: 'error', message: `exit code ${run.code}: ${run.stderr}`.trim() });
  return findings;
}
