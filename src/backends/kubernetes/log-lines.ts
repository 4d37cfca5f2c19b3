// A pod's log as the API serves it with timestamps=true: one `<RFC3339Nano timestamp> <text>` per
// line, stdout and stderr merged. Lines are split on bytes (a character split across chunks stays
// whole), decoded as UTF-8 with replacement (a workload may write anything), and given a cursor:
// `<timestamp>#<n>`, n counting the lines of that exact timestamp (nine digits: cursors sort as
// strings in the log's order). The runtime stamps every line of one write alike, so the timestamp
// alone does not tell lines apart; counted from the start of a second (sinceTime's precision, where
// every group of equal timestamps begins), n is the same in every read, which is what lets a resumed
// follow skip exactly what it already gave.
import type { BackendLogLine } from '../port.js';

/** A line's longest part kept (bytes, timestamp included): a longer one keeps its start, so one line
 * cannot take unbounded memory. */
export const MAX_LINE_BYTES = 65_536;

/** A line's position: its timestamp (UTC, nine fraction digits, so strings sort as times) and n. */
export interface LogPosition {
  ts: string;
  n: number;
}

export type LogLine = BackendLogLine & LogPosition;

const STAMP = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;
const CURSOR = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z)#(\d{1,9})$/;
const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

/** An RFC 3339 timestamp (any fraction, any offset) as UTC with nine fraction digits, and in ms. */
export function parseStamp(raw: string): { ts: string; at: number } | null {
  const m = STAMP.exec(raw);
  if (!m) return null;
  const seconds = Date.parse(`${m[1]}${m[3]}`);
  if (Number.isNaN(seconds)) return null;
  const nanos = (m[2] ?? '').padEnd(9, '0');
  return {
    ts: `${new Date(seconds).toISOString().slice(0, 19)}.${nanos}Z`,
    at: seconds + Number(nanos.slice(0, 3)),
  };
}

export function cursorOf(p: LogPosition): string {
  return `${p.ts}#${String(p.n).padStart(9, '0')}`;
}

/** The position a cursor names; null for null or a cursor this backend did not make (read from the start). */
export function parseCursor(cursor: string | null | undefined): LogPosition | null {
  const m = cursor ? CURSOR.exec(cursor) : null;
  return m ? { ts: m[1]!, n: Number(m[2]) } : null;
}

export function comparePositions(a: LogPosition, b: LogPosition): number {
  return a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : a.n - b.n;
}

/** The `sinceTime` that returns the line at `p` and all after it: its second (the API's precision). */
export function sinceTimeOf(p: LogPosition): string {
  return `${p.ts.slice(0, 19)}Z`;
}

/**
 * Splits a log stream into lines and numbers them. Counting starts at the stream's first line, so the
 * stream must begin at the log's start or at a second boundary (sinceTime) for the cursors to be the
 * log's; a tail read fixes its first group itself (pod-log-reads.ts).
 */
export class LineParser {
  private parts: Buffer[] = [];
  private partBytes = 0;
  private last: LogLine | null = null;

  /** The complete lines in `chunk` (with what came before it). */
  push(chunk: Buffer): LogLine[] {
    const out: LogLine[] = [];
    let from = 0;
    for (let nl = chunk.indexOf(10, from); nl !== -1; nl = chunk.indexOf(10, from)) {
      this.keep(chunk.subarray(from, nl));
      out.push(this.line());
      from = nl + 1;
    }
    if (from < chunk.length) this.keep(chunk.subarray(from));
    return out;
  }

  /** The last line when the stream ended cleanly without a newline after it. */
  end(): LogLine[] {
    return this.parts.length ? [this.line()] : [];
  }

  private keep(bytes: Buffer): void {
    const room = MAX_LINE_BYTES - this.partBytes;
    if (room <= 0 || bytes.length === 0) return;
    const kept = bytes.length <= room ? bytes : bytes.subarray(0, room);
    // Copied: the chunk's memory is not held for a line that is cut.
    this.parts.push(Buffer.from(kept));
    this.partBytes += kept.length;
  }

  private line(): LogLine {
    const bytes = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts);
    this.parts = [];
    this.partBytes = 0;
    const space = bytes.indexOf(32);
    const stamp = space > 0 && space <= 40 ? parseStamp(bytes.toString('latin1', 0, space)) : null;
    // A line without a timestamp (never with timestamps=true, but a log is the workload's): it stays
    // whole, placed after the line before it.
    const text = decoder.decode(stamp ? bytes.subarray(space + 1) : bytes);
    let ts = stamp?.ts ?? this.last?.ts ?? '1970-01-01T00:00:00.000000000Z';
    let at = stamp?.at ?? this.last?.at ?? 0;
    // Streams are stamped as they are read: a line may carry an earlier time than the one before it.
    // It keeps its place: cursors must sort as the log does.
    if (this.last && ts < this.last.ts) ({ ts, at } = this.last);
    const n = this.last?.ts === ts ? this.last.n + 1 : 0;
    const line: LogLine = { at, stream: null, text, ts, n, cursor: cursorOf({ ts, n }) };
    this.last = line;
    return line;
  }
}

/** The portable line: without the parser's fields. */
export function portable(line: LogLine): BackendLogLine {
  return { at: line.at, stream: line.stream, text: line.text, cursor: line.cursor };
}

/**
 * The last lines, by count or by bytes (text bytes and a newline each): older ones are dropped as new
 * ones come, and `dropped` says some were. At least the newest line is always kept.
 */
export class LineRing {
  private items: LogLine[] = [];
  private head = 0;
  private bytes = 0;
  dropped = false;

  constructor(private readonly limit: { lines?: number; bytes?: number }) {}

  push(line: LogLine): void {
    this.items.push(line);
    this.bytes += Buffer.byteLength(line.text) + 1;
    const { lines = Infinity, bytes = Infinity } = this.limit;
    while (
      this.items.length - this.head > 1 &&
      (this.items.length - this.head > lines || this.bytes > bytes)
    ) {
      this.bytes -= Buffer.byteLength(this.items[this.head]!.text) + 1;
      this.head++;
      this.dropped = true;
    }
    // Compacted now and then, so dropping stays cheap and the dropped lines are freed.
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }

  get size(): number {
    return this.items.length - this.head;
  }

  lines(): LogLine[] {
    return this.items.slice(this.head);
  }
}
