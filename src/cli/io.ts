/** Where a command writes: standard output and error, or a test's buffers. */
export interface Io {
  out(s: string): void;
  err(s: string): void;
  /** The stream behind `err`, when there is one: a terminal gets a redrawn progress bar. */
  errStream?: NodeJS.WritableStream & { isTTY?: boolean };
}
