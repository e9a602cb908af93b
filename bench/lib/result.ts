// What a scenario reports: rows of min / median / max over runs for the operator and its peer, their
// ratio, and the target the issue sets for that row (checked here, never in a test). Pure.
import { fmt, ratio, type Spread, spread } from './stats.ts';

export interface Row {
  label: string;
  unit: string;
  operator: Spread;
  peer?: Spread;
  /** operator ÷ peer of the medians. */
  ratio?: number;
  /** The target in words and whether the medians meet it. */
  target?: { text: string; met: boolean };
}

export interface ScenarioResult {
  scenario: string;
  title: string;
  params: Record<string, unknown>;
  rows: Row[];
  notes: string[];
  /** Raw per-run data worth keeping (lags for the plot, timings). */
  data?: Record<string, unknown>;
  durationSeconds: number;
}

export function row(
  label: string,
  unit: string,
  operatorRuns: readonly number[],
  peerRuns?: readonly number[],
  target?: (op: Spread, peer: Spread | undefined, r: number | undefined) => { text: string; met: boolean },
): Row {
  const operator = spread(operatorRuns);
  const peer = peerRuns ? spread(peerRuns) : undefined;
  const r = peer ? ratio(operator, peer) : undefined;
  return {
    label,
    unit,
    operator,
    ...(peer ? { peer, ratio: r } : {}),
    ...(target ? { target: target(operator, peer, r) } : {}),
  };
}

const cell = (s: Spread | undefined, unit: string) =>
  s ? `${fmt(s.median, unit)} (${fmt(s.min)}–${fmt(s.max)})` : '—';

/** A Markdown table: median (min–max) per side, the ratio, the target. */
export function markdown(results: readonly ScenarioResult[]): string {
  const lines = [
    '| scenario | measurement | operator: median (min–max) | peer: median (min–max) | ratio | target |',
    '|---|---|---|---|---|---|',
  ];
  for (const r of results) {
    for (const x of r.rows) {
      const target = x.target ? `${x.target.met ? '✅' : '❌'} ${x.target.text}` : '';
      lines.push(
        `| ${r.title} | ${x.label} | ${cell(x.operator, x.unit)} | ${cell(x.peer, x.unit)} | ${x.ratio === undefined ? '' : fmt(x.ratio)} | ${target} |`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

/** The same table for a terminal. */
export function plain(results: readonly ScenarioResult[]): string {
  const rows = [
    ['scenario', 'measurement', 'operator med (min–max)', 'peer med (min–max)', 'ratio', 'target'],
  ];
  for (const r of results)
    for (const x of r.rows)
      rows.push([
        r.title,
        x.label,
        cell(x.operator, x.unit),
        cell(x.peer, x.unit),
        x.ratio === undefined ? '' : fmt(x.ratio),
        x.target ? `${x.target.met ? 'met' : 'MISSED'}: ${x.target.text}` : '',
      ]);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return `${rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}

/**
 * JSON indented like JSON.stringify(v, null, 2), but a list of numbers stays on one line: a run's lags
 * are thousands of numbers, one per line they made results.json most of a megabyte.
 */
export function resultsJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2).replace(
    /\[\n\s+(-?[\d.eE+-]+(?:,\n\s+-?[\d.eE+-]+)*)\n\s+\]/g,
    (_, items: string) => `[${items.split(/,\n\s+/).join(', ')}]`,
  )}\n`;
}
