/** Nearest-rank percentile of an ascending array: the ⌈p·n/100⌉-th smallest; null when empty. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const k = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(k, sorted.length) - 1]!;
}
