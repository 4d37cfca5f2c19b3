// The report: number formats, percentiles, Markdown tables, and the report itself (printed as it
// is written, then saved to the results file).
import fs from 'node:fs';
import path from 'node:path';
import type { Started } from './servers.js';

// ─────────────────────────── stats and tables ───────────────────────────

export function pct(sorted: number[], q: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
export const f1 = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '—');
export const f0 = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '—');
export const ms = (n: number) =>
  Number.isFinite(n) ? (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2)) : '—';

/** "met" / "NOT met" for a figure against an issue-14 target (Infinity = "never happened"); "not measured"
 * when the figure is missing (NaN).
 */
export function verdict(value: number, op: '<=' | '>=', target: number): string {
  if (Number.isNaN(value)) return 'not measured';
  return (op === '<=' ? value <= target : value >= target) ? 'met' : 'NOT met';
}

export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padStart(widths[i]!)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => `${'-'.repeat(w + 1)}:`).join('|')}|`, ...rows.map(line)].join(
    '\n',
  );
}

const report: string[] = [];
export function out(text = ''): void {
  console.log(text);
  report.push(text);
}

export function reportServerErrors(server: Started): void {
  const text = server.stderr.join('');
  if (text.trim())
    out(`Server stderr (first lines):\n\n    ${text.split('\n').slice(0, 8).join('\n    ')}\n`);
}

/** Writes the report to `resultsFile`, keeping text after a `<!-- notes -->` line in the existing file. */
export function writeReport(resultsFile: string): void {
  const previous = fs.existsSync(resultsFile) ? fs.readFileSync(resultsFile, 'utf8') : '';
  const notes = /<!-- notes -->[\s\S]*$/.exec(previous)?.[0];
  fs.writeFileSync(resultsFile, `${report.join('\n')}\n${notes ? `\n${notes}` : ''}`);
  console.log(`\nwritten to ${path.relative(process.cwd(), resultsFile)}`);
}
