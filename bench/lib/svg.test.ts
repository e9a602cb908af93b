import { describe, expect, it } from 'vitest';
import { ecdf, ecdfPlot, niceCeil, simplify } from './svg.ts';

describe('lag plot', () => {
  it('rounds axis ends up to 1, 2 or 5 × 10^k', () => {
    expect([0.3, 1, 1.5, 7, 12, 61].map(niceCeil)).toEqual([0.5, 1, 2, 10, 20, 100]);
    expect(niceCeil(0)).toBe(1);
  });

  it('draws the empirical distribution as steps from 0 to 1, clipped to the axis', () => {
    expect(ecdf([2, 1, 50], 10)).toEqual([
      [0, 0],
      [1, 0],
      [1, 1 / 3],
      [2, 1 / 3],
      [2, 2 / 3],
      [10, 2 / 3],
      [10, 1],
      [10, 1],
    ]);
    expect(ecdf([], 5)).toEqual([
      [0, 0],
      [5, 0],
    ]);
  });

  it('keeps only the corners of the step curve: the same line with fewer points', () => {
    expect(
      simplify([
        [0, 0],
        [1, 0],
        [1, 0],
        [2, 0],
        [2, 1],
        [2, 2],
        [2, 3],
        [3, 3],
      ]),
    ).toEqual([
      [0, 0],
      [2, 0],
      [2, 3],
      [3, 3],
    ]);
    // 10,000 lags within 1 s on a 10 s axis drawn at 0.1 px: far fewer points than values.
    const values = Array.from({ length: 10_000 }, (_, i) => i / 10_000);
    const pts = simplify(
      ecdf(values, 10).map(([x, y]) => [Math.round(x * 40) / 10, Math.round(y * 2000) / 10] as const),
    );
    expect(pts.length).toBeLessThan(1000);
    expect(pts[0]).toEqual([0, 0]);
    expect(pts.at(-1)).toEqual([40, 200]);
  });

  it('renders one panel per size with a line per series, labels escaped', () => {
    const svg = ecdfPlot(
      [
        { title: 'N=100', series: [{ label: 'operator', color: 'red', values: [1, 2] }] },
        { title: 'N=<500>', series: [{ label: 'CronJob', color: 'blue', dashed: true, values: [3] }] },
      ],
      'caption & more',
    );
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg" width="640"')).toBe(true);
    expect(svg.match(/<polyline /g)).toHaveLength(2);
    expect(svg).toContain('N=&lt;500&gt;');
    expect(svg).toContain('stroke-dasharray="5 3"');
    expect(svg).toContain('operator (2)');
    expect(svg).toContain('caption &amp; more');
  });
});
