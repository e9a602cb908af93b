// The lag plot of docs/performance.md: one panel per schedule size, the empirical distribution (share
// of runs created within x seconds of their slot) of the operator and of the CronJob controller. Plain
// SVG text, no plotting dependency. Pure.

export interface Series {
  label: string;
  color: string;
  dashed?: boolean;
  /** Lags in seconds. */
  values: readonly number[];
}

export interface Panel {
  title: string;
  series: readonly Series[];
}

const W = 320;
const H = 240;
const M = { left: 44, right: 12, top: 28, bottom: 40 };

/** A round axis end at or above `v` (1, 2, 5 × 10^k). */
export function niceCeil(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const n = (v: number) => Number(v.toFixed(1));

/** Step points of the empirical CDF of `values`, clipped to [0, xMax]. */
export function ecdf(values: readonly number[], xMax: number): [number, number][] {
  const sorted = [...values].sort((a, b) => a - b);
  const pts: [number, number][] = [[0, 0]];
  sorted.forEach((v, i) => {
    const x = Math.min(Math.max(v, 0), xMax);
    pts.push([x, i / sorted.length], [x, (i + 1) / sorted.length]);
  });
  pts.push([xMax, sorted.length ? 1 : 0]);
  return pts;
}

/**
 * Drops the points in the middle of a horizontal or vertical run, and repeats: the drawn line is the
 * same, but thousands of runs become at most about two points per pixel column of the step curve.
 */
export function simplify(points: readonly (readonly [number, number])[]): [number, number][] {
  const out: [number, number][] = [];
  for (const [x, y] of points) {
    const last = out.at(-1);
    if (last && last[0] === x && last[1] === y) continue;
    const prev = out.at(-2);
    if (prev && last && ((prev[0] === last[0] && last[0] === x) || (prev[1] === last[1] && last[1] === y)))
      out[out.length - 1] = [x, y];
    else out.push([x, y]);
  }
  return out;
}

function panel(p: Panel, offsetX: number): string {
  const all = p.series.flatMap((s) => s.values);
  const xMax = niceCeil(Math.max(1, ...all));
  const iw = W - M.left - M.right;
  const ih = H - M.top - M.bottom;
  const sx = (x: number) => offsetX + M.left + (x / xMax) * iw;
  const sy = (y: number) => M.top + (1 - y) * ih;
  const out: string[] = [];
  out.push(
    `<text x="${n(offsetX + W / 2)}" y="16" text-anchor="middle" font-weight="bold">${esc(p.title)}</text>`,
  );
  out.push(
    `<rect x="${n(sx(0))}" y="${n(sy(1))}" width="${n(iw)}" height="${n(ih)}" fill="none" stroke="#999"/>`,
  );
  for (let i = 0; i <= 4; i++) {
    const y = i / 4;
    out.push(`<line x1="${n(sx(0))}" x2="${n(sx(xMax))}" y1="${n(sy(y))}" y2="${n(sy(y))}" stroke="#eee"/>`);
    out.push(
      `<text x="${n(sx(0) - 4)}" y="${n(sy(y) + 4)}" text-anchor="end">${Math.round(y * 100)}%</text>`,
    );
    const x = (xMax * i) / 4;
    out.push(
      `<text x="${n(sx(x))}" y="${n(sy(0) + 14)}" text-anchor="middle">${Number(x.toPrecision(3))}</text>`,
    );
  }
  out.push(
    `<text x="${n(offsetX + M.left + iw / 2)}" y="${H - 6}" text-anchor="middle">lag after the slot (s)</text>`,
  );
  p.series.forEach((s, i) => {
    const pts = simplify(ecdf(s.values, xMax).map(([x, y]) => [n(sx(x)), n(sy(y))] as const))
      .map(([x, y]) => `${x},${y}`)
      .join(' ');
    out.push(
      `<polyline points="${pts}" fill="none" stroke="${s.color}" stroke-width="1.8"${s.dashed ? ' stroke-dasharray="5 3"' : ''}/>`,
    );
    const ly = sy(0.3) + i * 14;
    out.push(
      `<line x1="${n(sx(xMax * 0.45))}" x2="${n(sx(xMax * 0.55))}" y1="${n(ly)}" y2="${n(ly)}" stroke="${s.color}" stroke-width="1.8"${s.dashed ? ' stroke-dasharray="5 3"' : ''}/>`,
    );
    out.push(`<text x="${n(sx(xMax * 0.57))}" y="${n(ly + 4)}">${esc(s.label)} (${s.values.length})</text>`);
  });
  return out.join('\n');
}

/** Panels side by side in one SVG document. */
export function ecdfPlot(panels: readonly Panel[], caption: string): string {
  const width = Math.max(1, panels.length) * W;
  const height = H + 20;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    ...panels.map((p, i) => panel(p, i * W)),
    `<text x="6" y="${height - 4}" fill="#555">${esc(caption)}</text>`,
    '</svg>',
    '',
  ].join('\n');
}
