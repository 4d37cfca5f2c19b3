/**
 * Config documents (JSON, or a documented YAML subset) parsed into plain values,
 * remembering the line each object/array started on so that validation errors can
 * name a line.
 *
 * YAML subset: block mappings and sequences by indentation (spaces only), `- ` items
 * (including `- key: value` maps), `#` comments, plain/single/double-quoted scalars,
 * numbers, true/false, null/~, and flow collections `[a, b]` / `{k: v}` on one line.
 * Not supported (clear error): tabs for indentation, anchors/aliases, tags, block
 * scalars (`|`, `>`), multi-document streams, multi-line flow collections.
 */

export type Value = null | boolean | number | string | Value[] | { [k: string]: Value };

export class DocError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    message: string,
  ) {
    super(`${file}:${line}: ${message}`);
    this.name = 'DocError';
  }
}

export interface Doc {
  file: string;
  root: Value;
  /** Line where an object or array value started (1-based). */
  lineOf(v: unknown): number;
}

function makeDoc(file: string, root: Value, lines: WeakMap<object, number>): Doc {
  return {
    file,
    root,
    lineOf: (v: unknown) => (v !== null && typeof v === 'object' ? (lines.get(v) ?? 1) : 1),
  };
}

// ---------------------------------------------------------------- JSON

export function parseJsonDoc(text: string, file = '<json>'): Doc {
  const lines = new WeakMap<object, number>();
  let i = 0;
  let line = 1;
  const n = text.length;
  const fail = (m: string): never => {
    throw new DocError(file, line, m);
  };
  const ws = (): void => {
    while (i < n) {
      const c = text[i];
      if (c === '\n') line++;
      else if (c !== ' ' && c !== '\t' && c !== '\r') break;
      i++;
    }
  };
  const str = (): string => {
    i++; // opening quote
    let s = '';
    for (;;) {
      if (i >= n) fail('unterminated string');
      const c = text[i]!;
      if (c === '"') {
        i++;
        return s;
      }
      if (c === '\n') fail('newline inside a string');
      if (c === '\\') {
        const e = text[i + 1];
        const map: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
        if (e === 'u') {
          const hex = text.slice(i + 2, i + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('bad \\u escape');
          s += String.fromCharCode(parseInt(hex, 16));
          i += 6;
          continue;
        }
        const m = e === undefined ? undefined : map[e];
        if (m === undefined) fail(`bad escape \\${e ?? ''}`);
        s += m;
        i += 2;
        continue;
      }
      s += c;
      i++;
    }
  };
  const value = (): Value => {
    ws();
    if (i >= n) fail('unexpected end of input');
    const c = text[i]!;
    if (c === '{') {
      const obj: { [k: string]: Value } = {};
      lines.set(obj, line);
      i++;
      ws();
      if (text[i] === '}') {
        i++;
        return obj;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a quoted key');
        const k = str();
        ws();
        if (text[i] !== ':') fail(`expected ':' after key "${k}"`);
        i++;
        if (Object.prototype.hasOwnProperty.call(obj, k)) fail(`duplicate key "${k}"`);
        obj[k] = value();
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') {
          i++;
          return obj;
        }
        fail("expected ',' or '}'");
      }
    }
    if (c === '[') {
      const arr: Value[] = [];
      lines.set(arr, line);
      i++;
      ws();
      if (text[i] === ']') {
        i++;
        return arr;
      }
      for (;;) {
        arr.push(value());
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') {
          i++;
          return arr;
        }
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return str();
    const m = /^(-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?|true|false|null)/.exec(text.slice(i, i + 64));
    if (!m) fail(`unexpected character '${c}'`);
    const tok = m![0];
    i += tok.length;
    if (tok === 'true') return true;
    if (tok === 'false') return false;
    if (tok === 'null') return null;
    return Number(tok);
  };
  const root = value();
  ws();
  if (i < n) fail('unexpected content after the end of the document');
  return makeDoc(file, root, lines);
}

// ---------------------------------------------------------------- YAML subset

interface YLine {
  no: number;
  indent: number;
  text: string;
}

function stripComment(s: string): string {
  let q: string | undefined;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (q) {
      if (c === q) {
        if (q === "'" && s[i + 1] === "'") i++;
        else q = undefined;
      } else if (c === '\\' && q === '"') i++;
    } else if (c === '"' || c === "'") {
      if (i === 0 || /[\s:[{,-]/.test(s[i - 1]!)) q = c;
    } else if (c === '#' && (i === 0 || s[i - 1] === ' ')) {
      return s.slice(0, i);
    }
  }
  return s;
}

export function parseYamlDoc(text: string, file = '<yaml>'): Doc {
  const lines = new WeakMap<object, number>();
  const ys: YLine[] = [];
  text.split(/\r?\n/).forEach((raw, idx) => {
    const no = idx + 1;
    const lead = /^[ \t]*/.exec(raw)![0];
    if (lead.includes('\t') && raw.trim() !== '') throw new DocError(file, no, 'tabs are not allowed for indentation');
    const body = stripComment(raw).trimEnd();
    if (body.trim() === '') return;
    if (/^(---|\.\.\.)\s*$/.test(body)) {
      if (ys.length > 0) throw new DocError(file, no, 'multi-document YAML is not supported');
      return;
    }
    ys.push({ no, indent: lead.length, text: body.slice(lead.length) });
  });
  let pos = 0;

  const scalar = (s: string, no: number): Value => {
    const t = s.trim();
    if (t.startsWith('[') || t.startsWith('{')) return flow(t, no);
    if (/^[&*!]/.test(t)) throw new DocError(file, no, 'anchors, aliases and tags are not supported');
    if (t === '|' || t === '>' || /^[|>][+-]?\d*$/.test(t)) throw new DocError(file, no, 'block scalars (| and >) are not supported');
    if (t.startsWith('"')) {
      if (!t.endsWith('"') || t.length < 2) throw new DocError(file, no, 'unterminated double-quoted string');
      try {
        return JSON.parse(t) as string;
      } catch {
        throw new DocError(file, no, `bad double-quoted string ${t}`);
      }
    }
    if (t.startsWith("'")) {
      if (!t.endsWith("'") || t.length < 2) throw new DocError(file, no, 'unterminated single-quoted string');
      return t.slice(1, -1).replace(/''/g, "'");
    }
    if (t === '' || t === '~' || t === 'null' || t === 'Null' || t === 'NULL') return null;
    if (/^(true|True|TRUE)$/.test(t)) return true;
    if (/^(false|False|FALSE)$/.test(t)) return false;
    if (/^[-+]?(\d[\d_]*)(\.\d*)?([eE][-+]?\d+)?$/.test(t) || /^[-+]?\.\d+([eE][-+]?\d+)?$/.test(t)) {
      return Number(t.replace(/_/g, ''));
    }
    return t;
  };

  const flow = (t: string, no: number): Value => {
    let i = 0;
    const fail = (m: string): never => {
      throw new DocError(file, no, m);
    };
    const sp = (): void => {
      while (t[i] === ' ') i++;
    };
    const item = (stop: string): Value => {
      sp();
      const c = t[i];
      if (c === '[') {
        const arr: Value[] = [];
        lines.set(arr, no);
        i++;
        sp();
        if (t[i] === ']') {
          i++;
          return arr;
        }
        for (;;) {
          arr.push(item(',]'));
          sp();
          if (t[i] === ',') {
            i++;
            continue;
          }
          if (t[i] === ']') {
            i++;
            return arr;
          }
          return fail("expected ',' or ']' in a flow sequence");
        }
      }
      if (c === '{') {
        const obj: { [k: string]: Value } = {};
        lines.set(obj, no);
        i++;
        sp();
        if (t[i] === '}') {
          i++;
          return obj;
        }
        for (;;) {
          sp();
          const kv = item(':,}');
          if (typeof kv !== 'string' && typeof kv !== 'number') fail('flow mapping keys must be scalars');
          sp();
          if (t[i] !== ':') fail("expected ':' in a flow mapping");
          i++;
          const k = String(kv);
          if (Object.prototype.hasOwnProperty.call(obj, k)) fail(`duplicate key '${k}'`);
          obj[k] = item(',}');
          sp();
          if (t[i] === ',') {
            i++;
            continue;
          }
          if (t[i] === '}') {
            i++;
            return obj;
          }
          return fail("expected ',' or '}' in a flow mapping");
        }
      }
      if (c === '"' || c === "'") {
        let j = i + 1;
        while (j < t.length) {
          if (t[j] === '\\' && c === '"') j += 2;
          else if (t[j] === c) {
            if (c === "'" && t[j + 1] === "'") j += 2;
            else break;
          } else j++;
        }
        if (j >= t.length) fail('unterminated quoted string');
        const s = t.slice(i, j + 1);
        i = j + 1;
        return scalar(s, no);
      }
      let j = i;
      while (j < t.length && !stop.includes(t[j]!)) j++;
      const s = t.slice(i, j);
      i = j;
      return scalar(s, no);
    };
    const v = item('');
    sp();
    if (i < t.length) fail(`unexpected '${t.slice(i)}' after a flow collection`);
    return v;
  };

  /** Split "key: rest" (key possibly quoted). Returns undefined when not a mapping line. */
  const splitKey = (s: string): { key: string; rest: string } | undefined => {
    let key: string;
    let after: number;
    if (s.startsWith('"') || s.startsWith("'")) {
      const q = s[0]!;
      let j = 1;
      while (j < s.length && s[j] !== q) j += s[j] === '\\' && q === '"' ? 2 : 1;
      if (j >= s.length) return undefined;
      key = String(scalar(s.slice(0, j + 1), 0));
      after = j + 1;
      if (s[after] !== ':') return undefined;
    } else {
      const m = /^([^:#[\]{},][^:]*?)\s*:(\s|$)/.exec(s);
      if (!m) return undefined;
      key = m[1]!;
      after = m[1]!.length + (s.slice(m[1]!.length).indexOf(':'));
    }
    return { key, rest: s.slice(after + 1).trim() };
  };

  const block = (indent: number): Value => {
    const first = ys[pos]!;
    if (first.text === '-' || first.text.startsWith('- ')) return seq(indent);
    return map(indent);
  };

  const valueAfterKey = (rest: string, keyLine: YLine, indent: number): Value => {
    if (rest !== '') return scalar(rest, keyLine.no);
    const next = ys[pos];
    if (next && next.indent > indent) return block(next.indent);
    if (next && next.indent === indent && (next.text === '-' || next.text.startsWith('- '))) return seq(indent);
    return null;
  };

  const map = (indent: number): Value => {
    const obj: { [k: string]: Value } = {};
    lines.set(obj, ys[pos]!.no);
    while (pos < ys.length) {
      const l = ys[pos]!;
      if (l.indent < indent) break;
      if (l.indent > indent) throw new DocError(file, l.no, 'unexpected indentation');
      if (l.text === '-' || l.text.startsWith('- ')) break;
      const kv = splitKey(l.text);
      if (!kv) throw new DocError(file, l.no, `expected 'key: value', got '${l.text}'`);
      if (Object.prototype.hasOwnProperty.call(obj, kv.key)) throw new DocError(file, l.no, `duplicate key '${kv.key}'`);
      pos++;
      obj[kv.key] = valueAfterKey(kv.rest, l, indent);
    }
    return obj;
  };

  const seq = (indent: number): Value => {
    const arr: Value[] = [];
    lines.set(arr, ys[pos]!.no);
    while (pos < ys.length) {
      const l = ys[pos]!;
      if (l.indent < indent) break;
      if (l.indent > indent) throw new DocError(file, l.no, 'unexpected indentation');
      if (!(l.text === '-' || l.text.startsWith('- '))) break;
      const rest = l.text === '-' ? '' : l.text.slice(2);
      const extra = rest.length - rest.trimStart().length;
      const body = rest.trimStart();
      if (body === '') {
        pos++;
        const next = ys[pos];
        arr.push(next && next.indent > indent ? block(next.indent) : null);
        continue;
      }
      if ((body === '-' || body.startsWith('- ')) || (splitKey(body) && !body.startsWith('[') && !body.startsWith('{'))) {
        // nested block starting on the dash line: re-read it as a line at a deeper indent
        ys[pos] = { no: l.no, indent: indent + 2 + extra, text: body };
        arr.push(block(indent + 2 + extra));
        continue;
      }
      pos++;
      arr.push(scalar(body, l.no));
    }
    return arr;
  };

  if (ys.length === 0) return makeDoc(file, null, lines);
  const root = ys[0]!.indent === 0 && !splitKey(ys[0]!.text) && !ys[0]!.text.startsWith('-') ? scalar(ys[0]!.text, ys[0]!.no) : block(ys[0]!.indent);
  if (typeof root !== 'object' || root === null) pos = Math.max(pos, 1);
  if (pos < ys.length) throw new DocError(file, ys[pos]!.no, 'unexpected content (check the indentation)');
  return makeDoc(file, root, lines);
}

export function parseDoc(text: string, file: string): Doc {
  if (/\.ya?ml$/i.test(file)) return parseYamlDoc(text, file);
  return parseJsonDoc(text, file);
}
