/**
 * Config documents (JSON or YAML) parsed into plain values, remembering the line each
 * object/array started on so that validation errors can name a line.
 *
 * Both are read by the `yaml` package (YAML 1.2, core schema; JSON is a subset), with its
 * LineCounter turning offsets into lines. On top of the library:
 * - `.json` files stay strict JSON (double-quoted keys and strings, JSON literals, flow
 *   collections only, no comments, no missing values or stray commas), as before;
 * - YAML anchors/aliases, tags and block scalars (`|`, `>`) are still refused with a clear
 *   error: the hand-written parser this replaced never accepted them, and the queues file
 *   does not need them;
 * - duplicate keys are refused at the line of the second key.
 */
import {
  CST,
  isAlias,
  isMap,
  isScalar,
  isSeq,
  Lexer,
  LineCounter,
  type Node,
  type Pair,
  parseDocument,
} from 'yaml';

export type Value = null | boolean | number | string | Value[] | { [k: string]: Value };

export class DocError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    message: string,
    /** 1-based column, for syntax errors. */
    readonly column?: number,
  ) {
    super(`${file}:${line}: ${message}${column === undefined ? '' : ` (column ${column})`}`);
    this.name = 'DocError';
  }
}

export interface Doc {
  file: string;
  root: Value;
  /** Line where an object or array value started (1-based). */
  lineOf(v: unknown): number;
}

const JSON_LITERAL = /^(-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?|true|false|null)$/;

/** The library's messages start upper-case; ours are lower-case after `file:line:`. */
const lowerFirst = (s: string): string => s.charAt(0).toLowerCase() + s.slice(1);

function parse(text: string, file: string, json: boolean): Doc {
  const lc = new LineCounter();
  // uniqueKeys off: duplicates are reported below with the key's own line.
  const ydoc = parseDocument(text, { lineCounter: lc, uniqueKeys: false, prettyErrors: false });
  const failAt = (offset: number, m: string, withColumn = false): never => {
    const { line, col } = lc.linePos(offset);
    throw new DocError(file, line, m, withColumn ? col : undefined);
  };
  const err = ydoc.errors[0];
  if (err)
    failAt(
      err.pos[0],
      err.code === 'MULTIPLE_DOCS' ? 'multi-document YAML is not supported' : lowerFirst(err.message),
      true,
    );
  if (json) checkJsonTokens(text, failAt);

  const lines = new WeakMap<object, number>();
  const start = (n: Node): number => n.range?.[0] ?? 0;
  const keyOf = (p: Pair<unknown, unknown>, holder: Node): string => {
    const k = p.key;
    if (!isScalar(k)) return failAt(start(holder), 'mapping keys must be scalars');
    if (json && k.type !== 'QUOTE_DOUBLE') return failAt(start(k), 'expected a quoted key');
    // A plain key is its text as written (`1.0: x` is the key "1.0", not "1").
    return k.type === 'PLAIN' && k.source !== undefined ? k.source : String(k.value);
  };
  const build = (n: unknown): Value => {
    if (n === null || n === undefined) return null; // `key:` with nothing after it
    if (isAlias(n)) return failAt(start(n), 'anchors, aliases and tags are not supported');
    const node = n as Node;
    if (node.anchor !== undefined || node.tag !== undefined)
      return failAt(start(node), 'anchors, aliases and tags are not supported');
    if (isScalar(node)) {
      if (node.type === 'BLOCK_LITERAL' || node.type === 'BLOCK_FOLDED')
        return failAt(start(node), 'block scalars (| and >) are not supported');
      if (
        json &&
        node.type !== 'QUOTE_DOUBLE' &&
        !(node.type === 'PLAIN' && JSON_LITERAL.test(node.source ?? ''))
      ) {
        return failAt(start(node), `unexpected character '${text[start(node)] ?? ''}'`);
      }
      return node.value as Value;
    }
    if (isSeq(node)) {
      if (json && !node.flow) return failAt(start(node), 'expected a JSON value');
      const arr: Value[] = [];
      lines.set(arr, lc.linePos(start(node)).line);
      for (const item of node.items) arr.push(build(item));
      return arr;
    }
    if (isMap(node)) {
      if (json && !node.flow) return failAt(start(node), 'expected a JSON value');
      const obj: { [k: string]: Value } = {};
      lines.set(obj, lc.linePos(start(node)).line);
      for (const p of node.items) {
        const k = keyOf(p, node);
        const at = isScalar(p.key) ? start(p.key) : start(node);
        if (Object.hasOwn(obj, k)) failAt(at, json ? `duplicate key "${k}"` : `duplicate key '${k}'`);
        if (json && p.value === null) failAt(at, `expected a value after key "${k}"`);
        obj[k] = build(p.value);
      }
      return obj;
    }
    return failAt(start(node), 'unsupported YAML node');
  };
  if (json && ydoc.contents === null) failAt(text.length, 'unexpected end of input');
  const root = build(ydoc.contents);
  return {
    file,
    root,
    lineOf: (v: unknown) => (v !== null && typeof v === 'object' ? (lines.get(v) ?? 1) : 1),
  };
}

/**
 * What YAML allows in flow collections but JSON does not, found on the token stream:
 * comments, and commas with no value before or after them (`[1,,2]`, `[1, 2,]`).
 */
function checkJsonTokens(
  text: string,
  failAt: (offset: number, m: string, withColumn?: boolean) => never,
): void {
  let offset = 0;
  let prev: string | null = null; // type of the previous significant token
  for (const tok of new Lexer().lex(text)) {
    const type = CST.tokenType(tok);
    // The lexer's mode markers are not source text.
    if (type === 'doc-mode' || type === 'scalar' || type === 'flow-error-end') continue;
    if (type === 'comment') failAt(offset, 'comments are not allowed in JSON', true);
    const closes = type === 'flow-map-end' || type === 'flow-seq-end';
    // after `[`, `{`, `,` or `:` a value must come
    const wantsValue =
      prev === 'flow-map-start' || prev === 'flow-seq-start' || prev === 'comma' || prev === 'map-value-ind';
    if ((type === 'comma' && wantsValue) || (closes && (prev === 'comma' || prev === 'map-value-ind')))
      failAt(offset, `unexpected character '${tok}'`, true);
    if (type !== 'space' && type !== 'newline') prev = type;
    offset += tok.length;
  }
}

export function parseJsonDoc(text: string, file = '<json>'): Doc {
  return parse(text, file, true);
}

export function parseYamlDoc(text: string, file = '<yaml>'): Doc {
  return parse(text, file, false);
}

export function parseDoc(text: string, file: string): Doc {
  if (/\.ya?ml$/i.test(file)) return parseYamlDoc(text, file);
  return parseJsonDoc(text, file);
}
