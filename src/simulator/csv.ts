/**
 * A small, strict RFC 4180 CSV reader: quoted fields (with "" escapes and embedded
 * commas/newlines), CRLF or LF line ends, a header row, blank lines skipped.
 * Every record carries the 1-based physical line number it started on, so callers
 * can report errors precisely.
 */

export class CsvError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    message: string,
  ) {
    super(`${file}:${line}: ${message}`);
    this.name = 'CsvError';
  }
}

export interface CsvRecord {
  /** 1-based line number where the record starts. */
  line: number;
  fields: string[];
}

export interface CsvTable {
  header: string[];
  rows: CsvRecord[];
}

/** Split text into records. Throws CsvError on an unterminated quote or stray quote. */
export function parseCsvRecords(text: string, file = '<csv>'): CsvRecord[] {
  const out: CsvRecord[] = [];
  let i = 0;
  let line = 1;
  const n = text.length;
  if (text.charCodeAt(0) === 0xfeff) i = 1; // BOM
  while (i < n) {
    const startLine = line;
    const fields: string[] = [];
    let field = '';
    let endOfRecord = false;
    while (!endOfRecord) {
      if (i >= n) {
        fields.push(field);
        break;
      }
      let c = text[i];
      if (c === '"' && field.length === 0) {
        // quoted field
        i++;
        const quoteLine = line;
        for (;;) {
          if (i >= n) throw new CsvError(file, quoteLine, 'unterminated quoted field');
          c = text[i];
          if (c === '"') {
            if (text[i + 1] === '"') {
              field += '"';
              i += 2;
              continue;
            }
            i++;
            break;
          }
          if (c === '\n') line++;
          field += c;
          i++;
        }
        c = text[i];
        if (i < n && c !== ',' && c !== '\n' && c !== '\r') {
          throw new CsvError(file, line, 'unexpected character after closing quote');
        }
        continue;
      }
      if (c === ',') {
        fields.push(field);
        field = '';
        i++;
        continue;
      }
      if (c === '\r' || c === '\n') {
        fields.push(field);
        if (c === '\r' && text[i + 1] === '\n') i++;
        i++;
        line++;
        endOfRecord = true;
        continue;
      }
      if (c === '"') throw new CsvError(file, line, 'quote inside an unquoted field');
      // fast path: read up to the next special character
      let j = i;
      while (j < n) {
        const d = text.charCodeAt(j);
        if (d === 44 /* , */ || d === 10 || d === 13 || d === 34) break;
        j++;
      }
      field += text.slice(i, j);
      i = j;
    }
    const blank = fields.length === 1 && fields[0]!.trim() === '';
    if (!blank) out.push({ line: startLine, fields });
  }
  return out;
}

/** Parse a CSV with a header row; header names are trimmed and lower-cased. */
export function parseCsvTable(text: string, file = '<csv>'): CsvTable {
  const recs = parseCsvRecords(text, file);
  const head = recs.shift();
  if (!head) throw new CsvError(file, 1, 'empty file: a header row is required');
  const header = head.fields.map((h) => h.trim().toLowerCase());
  const seen = new Set<string>();
  for (const h of header) {
    if (h !== '' && seen.has(h)) throw new CsvError(file, head.line, `duplicate column '${h}'`);
    seen.add(h);
  }
  for (const r of recs) {
    if (r.fields.length > header.length) {
      throw new CsvError(file, r.line, `${r.fields.length} fields but the header has ${header.length}`);
    }
  }
  return { header, rows: recs };
}

/** Accessor that maps column names to indices. */
export class Columns {
  private readonly idx = new Map<string, number>();
  constructor(
    readonly header: string[],
    readonly file: string,
    headerLine = 1,
    required: string[] = [],
  ) {
    header.forEach((h, i) => this.idx.set(h, i));
    const missing = required.filter((r) => !this.idx.has(r));
    if (missing.length > 0) {
      throw new CsvError(file, headerLine, `missing required column(s): ${missing.join(', ')} (header: ${header.join(',')})`);
    }
  }
  has(name: string): boolean {
    return this.idx.has(name);
  }
  /** Raw trimmed value, or undefined when the column is absent or the cell empty. */
  get(rec: CsvRecord, name: string): string | undefined {
    const i = this.idx.get(name);
    if (i === undefined) return undefined;
    const v = rec.fields[i];
    if (v === undefined) return undefined;
    const t = v.trim();
    return t === '' ? undefined : t;
  }
  required(rec: CsvRecord, name: string): string {
    const v = this.get(rec, name);
    if (v === undefined) throw new CsvError(this.file, rec.line, `column '${name}' is empty`);
    return v;
  }
  number(rec: CsvRecord, name: string, opts: { min?: number; integer?: boolean; dflt?: number } = {}): number {
    const v = this.get(rec, name);
    if (v === undefined) {
      if (opts.dflt !== undefined) return opts.dflt;
      throw new CsvError(this.file, rec.line, `column '${name}' is empty`);
    }
    const x = Number(v);
    if (!Number.isFinite(x)) throw new CsvError(this.file, rec.line, `column '${name}': '${v}' is not a number`);
    if (opts.integer && !Number.isInteger(x)) {
      throw new CsvError(this.file, rec.line, `column '${name}': '${v}' must be a whole number`);
    }
    if (opts.min !== undefined && x < opts.min) {
      throw new CsvError(this.file, rec.line, `column '${name}': ${v} is below the minimum ${opts.min}`);
    }
    return x;
  }
}

/** Quote a value for CSV output when needed. */
export function csvCell(v: string | number): string {
  const s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
