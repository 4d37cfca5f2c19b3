// Arrows point inward: the core is pure, services are use cases over persistence and the core, schema
// and plugins sit on the services, src/server wires everything, config is a leaf. Read from the source.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  cycles,
  graphOf,
  type ImportEdge,
  importsOf,
  packagesOf,
  ROOT,
  tsFiles,
} from './helpers/import-graph.js';

const SOURCE_DIRS = ['src', 'schema', 'plugins'];
const sourceFiles = SOURCE_DIRS.flatMap(tsFiles);
const edges: ImportEdge[] = sourceFiles.flatMap(importsOf);

function offending(fromDir: string, forbidden: string[], allowed: string[] = []): string[] {
  return edges
    .filter((e) => e.from.startsWith(fromDir))
    .filter((e) => forbidden.some((f) => e.to.startsWith(f)) && !allowed.some((a) => e.to.startsWith(a)))
    .map((e) => `${e.from} → ${e.to}`);
}

/** The layer folders whose sub-folders are features; their top-level files are the layer's shared kernel. */
const FEATURE_LAYERS = [
  'src/core',
  'src/services',
  'src/persistence',
  'schema',
  'src/backends',
  'src/server',
];

/** A file's feature folder (`src/services/jobs`), or null for a layer's kernel file or a file elsewhere. */
function featureOf(file: string): string | null {
  for (const layer of FEATURE_LAYERS) {
    if (!file.startsWith(`${layer}/`)) continue;
    const rest = file.slice(layer.length + 1).split('/');
    return rest.length > 1 ? `${layer}/${rest[0]}` : null;
  }
  return null;
}

/** Folders that are modules without being a layer's feature: the front door's shared pieces and the leaf
 * config.
 */
const OTHER_MODULES = ['src/auth', 'src/events', 'src/shared', 'src/config', 'src/cli/tenant'];

/** The module a file belongs to (a feature folder or one of OTHER_MODULES), or null. */
function moduleOf(file: string): string | null {
  return OTHER_MODULES.find((m) => file.startsWith(`${m}/`)) ?? featureOf(file);
}

describe('dependency direction', () => {
  it('src/config is a leaf: it imports nothing of the application, only node builtins and zod', () => {
    expect(offending('src/config/', ['src/', 'schema/', 'plugins/'], ['src/config/'])).toEqual([]);
    const packages = tsFiles('src/config').flatMap((f) => packagesOf(f).map((p) => `${f}: ${p}`));
    expect(packages.filter((p) => !/: (node:\w+|zod)$/.test(p))).toEqual([]);
  });

  it('the scheduler core is pure: it imports no other layer and no I/O module', () => {
    expect(offending('src/core/', ['src/', 'schema/', 'plugins/'], ['src/core/'])).toEqual([]);
    const packages = tsFiles('src/core').flatMap((f) => packagesOf(f).map((p) => `${f}: ${p}`));
    expect(packages).toEqual([]);
  });

  it('plugins import no server, service, persistence or schema internals: they get ports through their options', () => {
    expect(
      offending('plugins/', ['src/server/', 'src/services/', 'src/persistence/', 'schema/', 'src/backends/']),
    ).toEqual([]);
  });

  it('services and persistence never reach up to the schema, plugins or the server', () => {
    expect(offending('src/services/', ['schema/', 'plugins/', 'src/server/'])).toEqual([]);
    expect(offending('src/persistence/', ['schema/', 'plugins/', 'src/server/', 'src/services/'])).toEqual(
      [],
    );
    expect(offending('src/backends/', ['schema/', 'plugins/', 'src/server/', 'src/services/'])).toEqual([]);
  });

  it('src/auth does not import src/services (the client error type lives in src/shared)', () => {
    expect(offending('src/auth/', ['src/services/'])).toEqual([]);
  });

  it('the schema reaches the scheduler core and the capability rules only through services', () => {
    expect(offending('schema/', ['src/core/', 'src/auth/'])).toEqual([]);
  });

  it('src/shared imports no other layer', () => {
    expect(offending('src/shared/', ['src/', 'schema/', 'plugins/'], ['src/shared/'])).toEqual([]);
  });

  it('the loaders do not import the service context (which holds them), nor does paging', () => {
    const files = ['src/services/loaders.ts', 'src/services/paging.ts'];
    expect(edges.filter((e) => files.includes(e.from) && e.to === 'src/services/context.ts')).toEqual([]);
  });

  it('no import cycle between files at run time (type-only and dynamic imports are erased or deferred)', () => {
    const runtime = edges.filter((e) => !e.typeOnly && !e.dynamic);
    expect(cycles(graphOf(runtime, (f) => f))).toEqual([]);
  });

  it('no import cycle between feature folders, type imports included', () => {
    expect(cycles(graphOf(edges, featureOf))).toEqual([]);
  });

  it('modules import each other only through their index.ts', () => {
    const around = edges.filter((e) => {
      const target = moduleOf(e.to);
      const source = moduleOf(e.from);
      return target !== null && target !== source && e.to !== `${target}/index.ts`;
    });
    expect(around.map((e) => `${e.from} → ${e.to}`)).toEqual([]);
  });

  it('every feature folder has its index.ts and a README that says what it owns', () => {
    const folders = [...new Set(sourceFiles.map(featureOf).filter((f): f is string => f !== null))];
    const missing = folders.flatMap((f) =>
      ['index.ts', 'README.md']
        .filter((name) => !fs.existsSync(path.join(ROOT, f, name)))
        .map((name) => `${f}/${name}`),
    );
    expect(missing).toEqual([]);
  });

  it('test files have distinct names: a failing test is found by its name alone', () => {
    const seen = new Map<string, string[]>();
    const walk = (dir: string): void => {
      for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
        const rel = `${dir}/${entry.name}`;
        if (entry.isDirectory()) walk(rel);
        else if (entry.name.endsWith('.test.ts'))
          seen.set(entry.name, [...(seen.get(entry.name) ?? []), rel]);
      }
    };
    walk('test');
    expect([...seen.values()].filter((paths) => paths.length > 1)).toEqual([]);
  });

  it('the cycle check itself finds a cycle', () => {
    const graph = new Map([
      ['a', new Set(['b'])],
      ['b', new Set(['c'])],
      ['c', new Set(['a'])],
      ['d', new Set(['a'])],
    ]);
    expect(cycles(graph)).toEqual([['a', 'b', 'c']]);
  });
});
