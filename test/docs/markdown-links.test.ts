import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

/** Every Markdown file of the repository: git's tracked and untracked-but-not-ignored files, or a walk of
 * the tree without git.
 */
function markdownFiles(): string[] {
  try {
    const out = execFileSync(
      'git',
      ['ls-files', '--cached', '--others', '--exclude-standard', '-z', '--', '*.md'],
      { cwd: root, encoding: 'utf8' },
    );
    return [...new Set(out.split('\0').filter(Boolean))]
      .filter((file) => fs.existsSync(path.join(root, file)))
      .sort();
  } catch {
    return walk('');
  }
}

function walk(dir: string): string[] {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name === '.git' || entry.name === 'data') return [];
    const relative = path.join(dir, entry.name);
    if (entry.isDirectory()) return walk(relative);
    return entry.name.endsWith('.md') ? [relative] : [];
  });
}

/** Markdown without its fenced code blocks and inline code spans, where a `[x](y)` is not a link. */
function withoutCode(text: string): string {
  return text.replace(/^(\s*)(```|~~~)[^\n]*\n[\s\S]*?^\1\2[^\n]*$/gm, '').replace(/(`+)[^`\n]*?\1/g, '');
}

/** The targets of inline links and images (`[text](target "title")`) and of reference definitions (`[id]: target`). */
function linkTargets(text: string): string[] {
  const body = withoutCode(text);
  const inline = [...body.matchAll(/!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map(
    (m) => m[1] ?? '',
  );
  const references = [...body.matchAll(/^\s{0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s+.*)?$/gm)].map(
    (m) => m[1] ?? '',
  );
  return [...inline, ...references].filter(Boolean);
}

/** A link this test checks: relative to the file, not a URL, mail address or an anchor on the same page. */
function isRelative(target: string): boolean {
  return !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith('#') && !target.startsWith('//');
}

interface Problem {
  file: string;
  target: string;
  problem: string;
}

function problemsOf(file: string): Problem[] {
  const text = fs.readFileSync(path.join(root, file), 'utf8');
  return linkTargets(text)
    .filter(isRelative)
    .flatMap((target): Problem[] => {
      const bare = decodeURI(target.split('#')[0]?.split('?')[0] ?? '');
      if (!bare) return [];
      const resolved = bare.startsWith('/')
        ? path.join(root, bare)
        : path.resolve(root, path.dirname(file), bare);
      const inside = path.relative(root, resolved);
      if (inside.startsWith('..') || path.isAbsolute(inside))
        return [{ file, target, problem: 'points outside the repository' }];
      if (!fs.existsSync(resolved)) return [{ file, target, problem: 'does not exist' }];
      return [];
    });
}

describe('Markdown links', () => {
  const files = markdownFiles();

  it('finds the Markdown files', () => {
    expect(files).toContain('README.md');
  });

  it('every relative link resolves to a file or folder inside the repository', () => {
    expect(files.flatMap(problemsOf)).toEqual([]);
  });

  it('the link parser sees inline links, images and references, and skips code', () => {
    const sample = [
      'See [a](docs/a.md#x) and ![b](img/b.png "B") and [c](https://example.com) [d](#here) [e](mailto:x@y.z).',
      '[ref]: ../outside.md',
      '`[not](a-link.md)`',
      '```',
      '[not](in-a-fence.md)',
      '```',
    ].join('\n');
    expect(linkTargets(sample).filter(isRelative)).toEqual(['docs/a.md#x', 'img/b.png', '../outside.md']);
  });
});
