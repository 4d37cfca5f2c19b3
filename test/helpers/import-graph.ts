// The repository's own import graph, read from the source text: every relative `import`/`export … from`
// and dynamic `import('…')`, resolved to repository paths. The dependency-direction test checks it.
import fs from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '..', '..');

export interface ImportEdge {
  from: string;
  to: string;
  /** `import type` / `export type`, or every named binding marked `type`: erased at run time. */
  typeOnly: boolean;
  /** `import('…')`: evaluated when called, not when the importer loads. */
  dynamic: boolean;
}

export function tsFiles(dir: string): string[] {
  const abs = path.join(ROOT, dir);
  if (!fs.existsSync(abs)) return [];
  return fs.readdirSync(abs, { withFileTypes: true }).flatMap((entry) => {
    const relative = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : tsFiles(relative);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [relative] : [];
  });
}

const STATIC = /^\s*(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*'([^']+)'/gm;
const SIDE_EFFECT = /^\s*import\s+'([^']+)'/gm;
const DYNAMIC = /import\(\s*'([^']+)'\s*\)/g;

function allTypeBindings(clause: string): boolean {
  const braces = /^\{([^}]*)\}$/.exec(clause.trim());
  if (!braces) return false;
  const names = braces[1]!
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return names.length > 0 && names.every((n) => n.startsWith('type '));
}

function resolve(file: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null;
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier));
  const candidates = [target.replace(/\.js$/, '.ts'), target, `${target}.ts`, `${target}/index.ts`];
  return (
    candidates.find((c) => fs.existsSync(path.join(ROOT, c)) && fs.statSync(path.join(ROOT, c)).isFile()) ??
    null
  );
}

/** Every relative import of `file` (a repository path), resolved; bare package imports are left out. */
export function importsOf(file: string): ImportEdge[] {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const edges: ImportEdge[] = [];
  const add = (specifier: string, typeOnly: boolean, dynamic: boolean) => {
    const to = resolve(file, specifier);
    if (to) edges.push({ from: file, to, typeOnly, dynamic });
  };
  for (const m of text.matchAll(STATIC)) add(m[4]!, Boolean(m[2]) || allTypeBindings(m[3]!), false);
  for (const m of text.matchAll(SIDE_EFFECT)) add(m[1]!, false, false);
  for (const m of text.matchAll(DYNAMIC)) add(m[1]!, false, true);
  return edges;
}

/** Bare package names a file imports (`node:fs`, `zod`, `@mikro-orm/core`…). */
export function packagesOf(file: string): string[] {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const specifiers = [...text.matchAll(STATIC)].map((m) => m[4]!);
  specifiers.push(...[...text.matchAll(DYNAMIC)].map((m) => m[1]!));
  return specifiers.filter((s) => !s.startsWith('.'));
}

/** The strongly connected sets of more than one node (Tarjan), each sorted; a cycle-free graph has none. */
export function cycles(edges: Map<string, Set<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const set: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        set.push(w);
      } while (w !== v);
      if (set.length > 1) found.push(set.sort());
    }
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** Groups edges by a key of each end (a file's folder, its feature…), dropping edges inside one group. */
export function graphOf(
  edges: ImportEdge[],
  keyOf: (file: string) => string | null,
): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const e of edges) {
    const a = keyOf(e.from);
    const b = keyOf(e.to);
    if (a === null || b === null || a === b) continue;
    if (!graph.has(a)) graph.set(a, new Set());
    graph.get(a)!.add(b);
  }
  return graph;
}
