import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..');

function tsFiles(dir: string): string[] {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(relative);
    return entry.name.endsWith('.ts') ? [relative] : [];
  });
}

/** Every module a file imports (static `from '…'` and dynamic `import('…')`), resolved to a repository path. */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(path.join(root, file), 'utf8');
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((m) => m[1]!);
  return specifiers.filter((s) => s.startsWith('.')).map((s) => path.relative(root, path.resolve(root, path.dirname(file), s)));
}

function offending(files: string[], forbidden: string[]): string[] {
  return files.flatMap((file) => importsOf(file).filter((target) => forbidden.some((f) => target.startsWith(f))).map((target) => `${file} → ${target}`));
}

describe('dependency direction', () => {
  it('src/auth does not import src/services (the client error type lives in src/shared)', () => {
    expect(offending(tsFiles('src/auth'), ['src/services/'])).toEqual([]);
  });

  it('the schema reaches the scheduler core and the capability rules only through services', () => {
    expect(offending(tsFiles('schema'), ['src/core/', 'src/auth/'])).toEqual([]);
  });

  it('src/shared imports no other layer', () => {
    expect(offending(tsFiles('src/shared'), ['src/', 'schema/', 'plugins/'])).toEqual([]);
  });

  it('the loaders do not import the service context (which holds them), nor does paging', () => {
    expect(offending(['src/services/loaders.ts', 'src/services/paging.ts'], ['src/services/context'])).toEqual([]);
  });
});
