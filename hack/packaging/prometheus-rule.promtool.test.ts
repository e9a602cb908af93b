// Prometheus's own tool on the shipped alerts: `promtool check rules` on the PrometheusRule's rule groups
// (packaging/monitoring/prometheusrule.yaml, as generated) and `promtool test rules` with the input series of
// prometheus-rule.promtool.yaml and prometheus-rule.promtool-hourly.yaml, which say when each alert must fire
// and resolve. promtool is built from
// its Go module by hack/build-tools.sh (group olm); without it the test fails and says how to build it.

import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { ROOT } from '../bundle.ts';
import { ALERTS } from './prometheus-rule.ts';
import { runTool } from './tools.ts';

const SHIPPED = join(ROOT, 'packaging/monitoring/prometheusrule.yaml');
const TEST_FILES = ['prometheus-rule.promtool.yaml', 'prometheus-rule.promtool-hourly.yaml'];

/** The rule file promtool reads: the PrometheusRule's spec ({groups: [...]}). */
function ruleFile(): string {
  const rule = YAML.parse(readFileSync(SHIPPED, 'utf8')) as { kind: string; spec: unknown };
  expect(rule.kind).toBe('PrometheusRule');
  return YAML.stringify(rule.spec, { lineWidth: 0 });
}

describe('the shipped alerts under promtool', () => {
  let dir = '';
  const promtool = (...args: string[]) => runTool(ROOT, 'promtool', args);
  const out = (r: { stdout: string; stderr: string }) => `${r.stdout}${r.stderr}`;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'vws-promtool-'));
    writeFileSync(join(dir, 'rules.yaml'), ruleFile());
    for (const f of TEST_FILES) copyFileSync(join(ROOT, 'hack/packaging', f), join(dir, f));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('passes promtool check rules', () => {
    const r = promtool('check', 'rules', join(dir, 'rules.yaml'));
    expect(out(r)).toContain(`SUCCESS: ${ALERTS.length} rules found`);
    expect(r.code).toBe(0);
  });

  it('fires and resolves every alert at the times its input series say', () => {
    const r = promtool('test', 'rules', ...TEST_FILES.map((f) => join(dir, f)));
    expect(out(r).match(/SUCCESS/g)).toHaveLength(TEST_FILES.length);
    expect(r.code, out(r)).toBe(0);
    // Every shipped alert has a test.
    const text = TEST_FILES.map((f) => readFileSync(join(dir, f), 'utf8')).join('\n');
    const tested = new Set([...text.matchAll(/alertname: (\w+)/g)].map((m) => m[1]));
    expect(ALERTS.map((a) => a.alert).filter((a) => !tested.has(a))).toEqual([]);
  });

  it('fails when an alert does not fire when it should (the tolerance of an overdue backup changed)', () => {
    const looser = ruleFile().replace(
      '> 2 * max by (namespace, applicationinstance) (vworkspace_instance_backup_interval_seconds)',
      '> 3 * max by (namespace, applicationinstance) (vworkspace_instance_backup_interval_seconds)',
    );
    expect(looser).not.toBe(ruleFile());
    writeFileSync(join(dir, 'rules.yaml'), looser);
    try {
      const r = promtool(
        'test',
        'rules',
        '--run',
        'backup overdue',
        join(dir, 'prometheus-rule.promtool.yaml'),
      );
      expect(r.code).not.toBe(0);
      expect(out(r)).toContain('alertname: VWorkspaceBackupOverdue');
    } finally {
      writeFileSync(join(dir, 'rules.yaml'), ruleFile());
    }
  });

  it('fails check rules on an expression Prometheus cannot parse', () => {
    writeFileSync(join(dir, 'broken.yaml'), ruleFile().replace('== 0', '== == 0'));
    const r = promtool('check', 'rules', join(dir, 'broken.yaml'));
    expect(r.code).not.toBe(0);
    expect(out(r)).toContain('VWorkspaceRestoreDrillFailed');
  });
});
