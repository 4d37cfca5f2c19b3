import fs from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';

/**
 * Renders deploy/helm/fairway the way `helm template` would, for the small subset of Helm's
 * template language the chart is allowed to use (there is no helm binary where the tests run):
 *
 *   {{ .Values.a.b }}  {{ .Release.Name }}  {{ .Release.Namespace }}
 *   {{ .Chart.Name }}  {{ .Chart.Version }}  {{ .Chart.AppVersion }}
 *   any of those piped to `quote` or `nindent N`
 *   {{ if .Values.x }} … {{ end }}   (no else; may nest)
 *   the `{{-` / `-}}` whitespace trim markers on any of them
 *
 * Anything else (include, toYaml, default, range, with, define, comments, `_helpers.tpl`, …)
 * throws ChartSubsetError, so the chart cannot silently grow beyond what the test renders.
 * Stricter than Helm where Helm is forgiving: a missing value printed into the output throws
 * (Helm prints nothing), and so do maps, lists, nulls and numbers Go would print in exponent form.
 */
export class ChartSubsetError extends Error {
  constructor(where: string, message: string) {
    super(`${where}: ${message}`);
    this.name = 'ChartSubsetError';
  }
}

export interface RenderOptions {
  releaseName?: string; // `helm template` default: 'release-name'
  namespace?: string; // default: 'default'
  /** Deep-merged over values.yaml, as `helm template -f override.yaml` does (lists are replaced). */
  values?: Record<string, unknown>;
}

export interface RenderedFile {
  /** e.g. 'templates/deployment.yaml' */
  file: string;
  text: string;
}

export type TemplateScope = {
  Values: Record<string, unknown>;
  Release: Record<string, unknown>;
  Chart: Record<string, unknown>;
};

const REFERENCE =
  /^\.(Values(?:\.[A-Za-z_][A-Za-z0-9_]*)+|Release\.(?:Name|Namespace)|Chart\.(?:Name|Version|AppVersion))$/;
// `{{- ` trims the text before, ` -}}` the text after; Go requires whitespace next to the dash.
const ACTION = /\{\{(-[ \t\r\n])?([\s\S]*?)([ \t\r\n]-)?\}\}/g;

type Node =
  | { kind: 'text'; text: string }
  | { kind: 'output'; ref: string; fn: OutputFn; where: string }
  | { kind: 'if'; ref: string; body: Node[]; where: string };
type OutputFn = { name: 'none' } | { name: 'quote' } | { name: 'nindent'; spaces: number };

export function renderChart(chartDir: string, options: RenderOptions = {}): RenderedFile[] {
  const chart = parse(fs.readFileSync(path.join(chartDir, 'Chart.yaml'), 'utf8')) as Record<string, unknown>;
  const defaults = (parse(fs.readFileSync(path.join(chartDir, 'values.yaml'), 'utf8')) ?? {}) as Record<
    string,
    unknown
  >;
  const scope: TemplateScope = {
    Values: deepMerge(defaults, options.values ?? {}),
    Release: { Name: options.releaseName ?? 'release-name', Namespace: options.namespace ?? 'default' },
    Chart: { Name: chart.name, Version: chart.version, AppVersion: chart.appVersion },
  };
  const templatesDir = path.join(chartDir, 'templates');
  return fs
    .readdirSync(templatesDir)
    .sort()
    .map((name) => {
      const file = `templates/${name}`;
      if (!/\.(yaml|yml|txt)$/.test(name) || name.startsWith('_')) {
        throw new ChartSubsetError(
          file,
          'only .yaml and NOTES.txt templates are supported (no partials or helpers)',
        );
      }
      return {
        file,
        text: renderTemplate(fs.readFileSync(path.join(templatesDir, name), 'utf8'), scope, file),
      };
    });
}

/** Every Kubernetes object the chart renders (NOTES.txt excluded, empty documents skipped, as Helm does). */
export function renderChartObjects(chartDir: string, options: RenderOptions = {}): Record<string, unknown>[] {
  return renderChart(chartDir, options)
    .filter((f) => f.file !== 'templates/NOTES.txt')
    .flatMap((f) => parseManifests(f.text, f.file));
}

/** Multi-document YAML → objects; a YAML error throws with the file name. */
export function parseManifests(text: string, file: string): Record<string, unknown>[] {
  return parseAllDocuments(text).flatMap((doc) => {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return [];
    if (typeof value !== 'object' || Array.isArray(value))
      throw new Error(`${file}: a document is not a mapping`);
    return [value as Record<string, unknown>];
  });
}

export function renderTemplate(source: string, scope: TemplateScope, file: string): string {
  return renderNodes(parseTemplate(source, file), scope);
}

function parseTemplate(source: string, file: string): Node[] {
  const root: Node[] = [];
  const stack: { body: Node[]; where: string }[] = [{ body: root, where: file }];
  const pieces: (
    | { kind: 'text'; text: string }
    | { kind: 'action'; body: string; trimBefore: boolean; trimAfter: boolean; where: string }
  )[] = [];
  let last = 0;
  for (const m of source.matchAll(ACTION)) {
    pieces.push({ kind: 'text', text: source.slice(last, m.index) });
    const line = source.slice(0, m.index).split('\n').length;
    pieces.push({
      kind: 'action',
      body: m[2]!.trim(),
      trimBefore: m[1] !== undefined,
      trimAfter: m[3] !== undefined,
      where: `${file}:${line}`,
    });
    last = m.index + m[0].length;
  }
  pieces.push({ kind: 'text', text: source.slice(last) });
  // Apply the trim markers to the neighbouring text before building the tree.
  pieces.forEach((piece, i) => {
    if (piece.kind !== 'action') return;
    const before = pieces[i - 1];
    const after = pieces[i + 1];
    if (piece.trimBefore && before?.kind === 'text') before.text = before.text.replace(/[ \t\r\n]+$/, '');
    if (piece.trimAfter && after?.kind === 'text') after.text = after.text.replace(/^[ \t\r\n]+/, '');
  });
  for (const piece of pieces) {
    const top = stack[stack.length - 1]!;
    if (piece.kind === 'text') {
      if (piece.text.includes('{{'))
        throw new ChartSubsetError(
          file,
          `an unterminated or malformed action near "${piece.text.slice(piece.text.indexOf('{{'), piece.text.indexOf('{{') + 30)}"`,
        );
      top.body.push({ kind: 'text', text: piece.text });
      continue;
    }
    const action = piece.body;
    const ifMatch = /^if\s+(\S+)$/.exec(action);
    if (ifMatch) {
      const node: Node = {
        kind: 'if',
        ref: checkReference(ifMatch[1]!, piece.where),
        body: [],
        where: piece.where,
      };
      top.body.push(node);
      stack.push({ body: node.body, where: piece.where });
    } else if (action === 'end') {
      if (stack.length === 1) throw new ChartSubsetError(piece.where, '`end` without `if`');
      stack.pop();
    } else {
      top.body.push(parseOutput(action, piece.where));
    }
  }
  if (stack.length > 1) throw new ChartSubsetError(stack[stack.length - 1]!.where, '`if` without `end`');
  return root;
}

function parseOutput(action: string, where: string): Node {
  const [refText, ...pipes] = action.split('|').map((s) => s.trim());
  const ref = checkReference(refText ?? '', where);
  if (pipes.length === 0) return { kind: 'output', ref, fn: { name: 'none' }, where };
  if (pipes.length > 1)
    throw new ChartSubsetError(where, `only one function per action is supported: "{{ ${action} }}"`);
  const pipe = pipes[0]!;
  if (pipe === 'quote') return { kind: 'output', ref, fn: { name: 'quote' }, where };
  const nindent = /^nindent\s+(\d+)$/.exec(pipe);
  if (nindent) return { kind: 'output', ref, fn: { name: 'nindent', spaces: Number(nindent[1]) }, where };
  throw new ChartSubsetError(where, `unsupported function "${pipe}" (only quote and nindent N)`);
}

function checkReference(text: string, where: string): string {
  if (!REFERENCE.test(text)) {
    throw new ChartSubsetError(
      where,
      `unsupported template construct "{{ ${text} }}" (only .Values.*, .Release.Name/Namespace, .Chart.Name/Version/AppVersion, quote, nindent, if/end)`,
    );
  }
  return text;
}

function renderNodes(nodes: Node[], scope: TemplateScope): string {
  let out = '';
  for (const node of nodes) {
    if (node.kind === 'text') out += node.text;
    else if (node.kind === 'if')
      out += isTruthy(lookup(scope, node.ref, node.where)) ? renderNodes(node.body, scope) : '';
    else out += applyOutput(lookup(scope, node.ref, node.where), node);
  }
  return out;
}

/** `.Values.a.b`: a missing `a` is an error in Helm (nil pointer); a missing `b` is nil. */
function lookup(scope: TemplateScope, ref: string, where: string): unknown {
  const [root, ...keys] = ref.slice(1).split('.');
  let value: unknown = scope[root as keyof TemplateScope];
  keys.forEach((key, i) => {
    if (value === undefined || value === null)
      throw new ChartSubsetError(where, `${ref}: ${keys.slice(0, i).join('.')} is not set`);
    if (typeof value !== 'object' || Array.isArray(value))
      throw new ChartSubsetError(
        where,
        `${ref}: cannot read ${key} of a ${Array.isArray(value) ? 'list' : typeof value}`,
      );
    value = (value as Record<string, unknown>)[key];
  });
  return value;
}

/** Go template truthiness: false, 0, nil and empty strings, lists and maps are false. */
function isTruthy(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === 0 || value === '') return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return true;
}

function applyOutput(value: unknown, node: Extract<Node, { kind: 'output' }>): string {
  const text = scalarText(value, node.ref, node.where);
  switch (node.fn.name) {
    case 'none':
      return text;
    case 'quote':
      // Sprig's quote is Go's %q; JSON.stringify matches it except for control characters.
      if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text))
        throw new ChartSubsetError(node.where, `${node.ref}: control characters are not supported in quote`);
      return JSON.stringify(text);
    case 'nindent': {
      if (typeof value !== 'string')
        throw new ChartSubsetError(node.where, `${node.ref}: nindent needs a string`);
      const pad = ' '.repeat(node.fn.spaces);
      return `\n${pad}${text.replaceAll('\n', `\n${pad}`)}`;
    }
  }
}

/** How Go's fmt prints a value, for the values it prints the same way JavaScript does. */
function scalarText(value: unknown, ref: string, where: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number') {
    const magnitude = Math.abs(value);
    // Helm's numbers are float64 and %v prints 1e6 as "1e+06": use a string for such values.
    if (!Number.isFinite(value) || magnitude >= 1e6 || (magnitude !== 0 && magnitude < 1e-4)) {
      throw new ChartSubsetError(
        where,
        `${ref}: ${value} would print in exponent form in Helm; quote it in values`,
      );
    }
    return String(value);
  }
  if (value === undefined) throw new ChartSubsetError(where, `${ref} is not set`);
  throw new ChartSubsetError(
    where,
    `${ref} is ${value === null ? 'null' : Array.isArray(value) ? 'a list' : 'a map'}: only scalars can be printed`,
  );
}

function deepMerge(
  base: Record<string, unknown>,
  override: Record<string, unknown>,
): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const current = merged[key];
    const bothMaps = isMap(current) && isMap(value);
    merged[key] = bothMaps ? deepMerge(current, value) : value;
  }
  return merged;
}

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
