// Summaries the benchmark reports. Pure.

/** The q-quantile (0..1) of `values` by nearest rank (what "p99 of 500 runs" means to a reader). */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1]!;
}

export interface Spread {
  min: number;
  median: number;
  max: number;
  /** Every run's value, in run order. */
  runs: number[];
}

/** min / median / max over runs (the median of an even count is the mean of the middle two). */
export function spread(runs: readonly number[]): Spread {
  const sorted = [...runs].filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return { min: Number.NaN, median: Number.NaN, max: Number.NaN, runs: [...runs] };
  const mid = sorted.length / 2;
  const median = sorted.length % 2 === 1 ? sorted[Math.floor(mid)]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { min: sorted[0]!, median, max: sorted.at(-1)!, runs: [...runs] };
}

/** operator ÷ peer of the medians; NaN when either is missing, Infinity over a zero peer. */
export function ratio(operator: Spread, peer: Spread): number {
  if (Number.isNaN(operator.median) || Number.isNaN(peer.median)) return Number.NaN;
  if (peer.median === 0) return operator.median === 0 ? 1 : Number.POSITIVE_INFINITY;
  return operator.median / peer.median;
}

/** Numbers as a table shows them: 3 significant digits, no exponent for everyday sizes. */
export function fmt(v: number, unit = ''): string {
  if (Number.isNaN(v)) return '—';
  if (!Number.isFinite(v)) return '∞';
  const abs = Math.abs(v);
  const s = abs >= 100 ? v.toFixed(0) : abs >= 10 ? v.toFixed(1) : abs >= 1 ? v.toFixed(2) : v.toPrecision(2);
  return `${s}${unit}`;
}
