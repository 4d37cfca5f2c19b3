// A log line as the graph shows it: cut when it is too long, secrets masked, and the reader's
// filters (since, contains, the last N). Pure: the service and the tests call it directly.

/** Longest line shown, in UTF-8 bytes; the rest is replaced by a marker saying how much was cut. */
export const MAX_LINE_BYTES = 16 * 1024;

/** What a masked secret value is replaced by. */
export const SECRET_MASK = '[secret]';

const encoder = new TextEncoder();
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const decoder = new TextDecoder('utf-8', { fatal: false });

/** Bytes as UTF-8 text; bytes that are not UTF-8 become U+FFFD, never an error. */
export function decodeUtf8(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}

/**
 * The line cut to MAX_LINE_BYTES (on a character boundary) with a marker naming the bytes left
 * out; a line within the limit is returned as it is. Lone surrogates (text that was not UTF-16)
 * are replaced like invalid bytes.
 */
export function cutLine(text: string, maxBytes = MAX_LINE_BYTES): string {
  const wellFormed = text.replace(LONE_SURROGATE, '\uFFFD');
  // A string of n UTF-16 units is at most 3n UTF-8 bytes: most lines need no encoding at all.
  if (wellFormed.length * 3 <= maxBytes) return wellFormed;
  const bytes = encoder.encode(wellFormed);
  if (bytes.length <= maxBytes) return wellFormed;
  let end = maxBytes;
  // Back off to the start of a character (continuation bytes are 10xxxxxx).
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return `${decoder.decode(bytes.subarray(0, end))} …[line cut: ${bytes.length - end} more bytes]`;
}

/**
 * Every occurrence of each secret value replaced by SECRET_MASK, the longest first (a secret that
 * contains another is masked whole). Empty values are ignored: they occur everywhere.
 */
export function maskSecrets(text: string, secrets: readonly string[]): string {
  if (secrets.length === 0) return text;
  let out = text;
  for (const secret of [...new Set(secrets)].filter((s) => s.length > 0).sort((a, b) => b.length - a.length))
    if (out.includes(secret)) out = out.split(secret).join(SECRET_MASK);
  return out;
}

/** What a reader asks of the lines (all optional). */
export interface LineFilter {
  /** Only lines written at or after (ms). */
  since?: number | null;
  /** Only lines containing this text (case-sensitive, after masking: a secret cannot be searched for). */
  contains?: string | null;
  /** Only the last N that pass the other filters. */
  tail?: number | null;
}

/** The lines that pass the filter, in their order. */
export function selectLines<T extends { at: number; text: string }>(
  lines: readonly T[],
  filter: LineFilter,
): T[] {
  const { since, contains, tail } = filter;
  let out = lines.filter(
    (l) =>
      (since == null || l.at >= since) && (contains == null || contains === '' || l.text.includes(contains)),
  );
  if (tail != null) out = tail <= 0 ? [] : out.slice(-tail);
  return out;
}

/** UTF-8 bytes of a line as stored (its text and a newline). */
export function lineBytes(line: { text: string }): number {
  // Exact for ASCII (the common case) without encoding; otherwise encoded.
  for (let i = 0; i < line.text.length; i++)
    if (line.text.charCodeAt(i) > 0x7f) return encoder.encode(line.text).length + 1;
  return line.text.length + 1;
}

/**
 * The last lines whose bytes add up to at most `maxBytes` (what an archive keeps of a pod), and
 * whether earlier ones were left out.
 */
export function keepLast<T extends { text: string }>(
  lines: readonly T[],
  maxBytes: number,
): { lines: T[]; truncated: boolean } {
  let bytes = 0;
  let start = lines.length;
  while (start > 0) {
    const next = lineBytes(lines[start - 1]!);
    if (bytes + next > maxBytes) break;
    bytes += next;
    start--;
  }
  return { lines: lines.slice(start), truncated: start > 0 };
}
