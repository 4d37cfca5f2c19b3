/**
 * CSV reading on top of `csv-parse` (strict RFC 4180: quoted fields with "" escapes and
 * embedded commas/newlines, CRLF, LF or CR line ends, a header row, blank lines skipped).
 * Every record carries the 1-based physical line number it started on, so callers can
 * report errors precisely.
 */
import { CsvError as CsvParseError, parse } from 'csv-parse/sync';

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

/** Our wording for csv-parse's syntax errors (tests and users know these). */
const SYNTAX_MESSAGES: Record<string, string> = {
  CSV_QUOTE_NOT_CLOSED: 'unterminated quoted field',
  INVALID_OPENING_QUOTE: 'quote inside an unquoted field',
  CSV_INVALID_CLOSING_QUOTE: 'unexpected character after closing quote',
};

/** Split text into records. Throws CsvError on an unterminated quote or stray quote. */
export function parseCsvRecords(text: string, file = '<csv>'): CsvRecord[] {
  // Record starts are tracked in bytes (csv-parse's `bytes`), so parse the UTF-8 bytes.
  const buf = Buffer.from(text, 'utf8');
  const out: CsvRecord[] = [];
  // Lines are counted here rather than taken from csv-parse's `lines`, which counts a CRLF
  // inside a quoted field as two lines; a CRLF, LF or CR is one line end.
  let line = 1;
  let counted = 0; // bytes of `buf` whose line ends are in `line`
  const lineAt = (bytes: number): number => {
    for (; counted < bytes; counted++) {
      const b = buf[counted];
      if (b === 10 || (b === 13 && buf[counted + 1] !== 10)) line++;
    }
    return line;
  };
  let recordStart = 0; // byte offset where the next record starts
  let parserLinesAtStart = 1; // csv-parse's own line count there
  try {
    parse(buf, {
      bom: true,
      // rows may be shorter than the header (missing trailing cells read as empty);
      // longer rows are refused by parseCsvTable with our message
      relax_column_count: true,
      record_delimiter: ['\r\n', '\n', '\r'],
      on_record: (fields: string[], ctx) => {
        const start = lineAt(recordStart);
        recordStart = ctx.bytes;
        parserLinesAtStart = ctx.lines + 1;
        const blank = fields.length === 1 && fields[0]!.trim() === '';
        if (!blank) out.push({ line: start, fields });
        return null; // collected above
      },
    });
  } catch (e) {
    if (!(e instanceof CsvParseError)) throw e;
    const start = lineAt(recordStart);
    const message = SYNTAX_MESSAGES[e.code];
    if (message === undefined) throw new CsvError(file, start, e.message);
    // an unterminated quote is reported at its record; other errors at their own line
    const offset =
      e.code === 'CSV_QUOTE_NOT_CLOSED'
        ? 0
        : Math.max(0, (e as unknown as { lines: number }).lines - parserLinesAtStart);
    throw new CsvError(file, start + offset, message);
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
      throw new CsvError(
        file,
        headerLine,
        `missing required column(s): ${missing.join(', ')} (header: ${header.join(',')})`,
      );
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
  number(
    rec: CsvRecord,
    name: string,
    opts: { min?: number; integer?: boolean; dflt?: number } = {},
  ): number {
    const v = this.get(rec, name);
    if (v === undefined) {
      if (opts.dflt !== undefined) return opts.dflt;
      throw new CsvError(this.file, rec.line, `column '${name}' is empty`);
    }
    const x = Number(v);
    if (!Number.isFinite(x))
      throw new CsvError(this.file, rec.line, `column '${name}': '${v}' is not a number`);
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
