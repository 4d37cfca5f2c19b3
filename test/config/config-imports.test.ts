import fs from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const configDir = path.join(root, 'src/config');

function tsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Every module a file imports or re-exports (static `from '…'`, side-effect `import '…'` and dynamic `import('…')`). */
function specifiersOf(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*['"]([^'"]+)['"]/g)].map((m) => m[1]!);
}

describe('src/config is a leaf', () => {
  it('imports nothing of the application: only node builtins, zod and its own files', () => {
    const builtins = new Set(builtinModules);
    const files = tsFiles(configDir);
    expect(files.length).toBeGreaterThan(10);
    const offending = files.flatMap((file) =>
      specifiersOf(file)
        .filter((specifier) => {
          if (specifier === 'zod') return false;
          if (specifier.startsWith('node:') || builtins.has(specifier)) return false;
          if (specifier.startsWith('.'))
            return !path.resolve(path.dirname(file), specifier).startsWith(configDir + path.sep);
          return true;
        })
        .map((specifier) => `${path.relative(root, file)} → ${specifier}`),
    );
    expect(offending).toEqual([]);
  });
});
