// The console is rebuilt when any file in its bundle changes: every module web/src imports from
// outside web/ (the CLI's job-file format) is in the source hash, so a change there is not served stale.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OUTSIDE_SOURCES } from '../../web/ensure-built.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');

function sources(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? sources(path.join(dir, e.name)) : [path.join(dir, e.name)]))
    .filter((f) => /\.(ts|tsx)$/.test(f));
}

describe('the console build', () => {
  it('hashes every module outside web/ that the bundle imports (type-only imports aside)', () => {
    const imported = new Set<string>();
    // Followed through: what an outside module imports is in the bundle too.
    const queue = sources(path.join(ROOT, 'web/src'));
    for (let file = queue.shift(); file; file = queue.shift()) {
      const text = fs.readFileSync(file, 'utf8');
      for (const m of text.matchAll(/^import\s+(type\s+)?[^'"]*from\s+'([^']+)'/gm)) {
        if (m[1] || !m[2]!.startsWith('.')) continue;
        const target = path.relative(ROOT, path.resolve(path.dirname(file), m[2]!)).replace(/\.js$/, '.ts');
        if (target.startsWith('web/') || imported.has(target)) continue;
        imported.add(target);
        queue.push(path.join(ROOT, target));
      }
    }
    expect([...imported].sort()).toEqual([...OUTSIDE_SOURCES].sort());
    for (const f of OUTSIDE_SOURCES) expect(fs.existsSync(path.join(ROOT, f)), f).toBe(true);
  });
});
