import { describe, expect, it } from 'vitest';
import { f0, f1, ms, pct, table } from '../../bench/api/report.js';

describe('bench/api report helpers', () => {
  it('pct is the nearest-rank percentile of a sorted list (NaN when empty)', () => {
    const xs = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    expect(pct(xs, 0.5)).toBe(5);
    expect(pct(xs, 0.99)).toBe(10);
    expect(pct(xs, 0)).toBe(1);
    expect(pct([7], 0.99)).toBe(7);
    expect(pct([], 0.5)).toBeNaN();
    // Unseen submits are padded with Infinity and show up as such in the tail.
    expect(pct([1, Infinity], 0.99)).toBe(Infinity);
  });

  it('number formats: a dash for non-finite values, fewer decimals for larger latencies', () => {
    expect(f1(12.345)).toBe('12.3');
    expect(f0(1234.5)).toBe('1,235');
    expect(ms(0.861)).toBe('0.86');
    expect(ms(23.94)).toBe('23.9');
    expect(ms(153.4)).toBe('153');
    for (const f of [f0, f1, ms]) {
      expect(f(NaN)).toBe('—');
      expect(f(Infinity)).toBe('—');
    }
  });

  it('table right-aligns every column to its widest cell, header included', () => {
    expect(
      table(
        ['n', 'p50 ms'],
        [
          ['1', '0.86'],
          ['128', '73.1'],
        ],
      ),
    ).toBe(['|   n | p50 ms |', '|----:|-------:|', '|   1 |   0.86 |', '| 128 |   73.1 |'].join('\n'));
  });
});
