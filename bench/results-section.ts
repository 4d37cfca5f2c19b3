// One bench's section of bench/RESULTS.md, kept between its own markers so a rerun replaces it
// and leaves the rest of the file (other benches, written readings) as it was.
import fs from 'node:fs';

/** Replaces the text from `start` to `end` (markers included) in `file` with `block`, or appends it. */
export function writeResultsSection(file: string, start: string, end: string, block: string): void {
  const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  const at = text.indexOf(start);
  const to = text.indexOf(end);
  const next =
    at >= 0 && to > at
      ? text.slice(0, at) + block + text.slice(to + end.length)
      : `${text.replace(/\n*$/, '\n\n')}${block}\n`;
  fs.writeFileSync(file, next);
}
