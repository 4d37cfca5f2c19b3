// A backend's or the archive's lines as the graph shows them: masked, cut, in one order across the
// pods of a run, each with a cursor that says where it is.
import type { BackendLogLine } from '../../backends/port.js';
import { cutLine, maskSecrets } from '../../core/logs/index.js';
import { containerOf } from '../jobs/index.js';

/** One line of a job's output, shown. */
export interface LogLine {
  at: number;
  run: number;
  podSet: string;
  pod: number;
  stream: 'stdout' | 'stderr' | null;
  text: string;
  /** Where this line is: `before` of a read, and the position of its pod in a stream cursor. */
  cursor: string;
  /** The backend's cursor of the line within its pod (not shown: `cursor` carries it). */
  podCursor: string;
}

/** A pod of a run: `run/podSet/index`. */
export const podKey = (run: number, podSet: string, index: number) => `${run}/${podSet}/${index}`;

interface LineCursor {
  /** at, run, pod set, index, the backend's cursor */
  a: number;
  r: number;
  s: string;
  i: number;
  c: string;
}

export function encodeLineCursor(c: LineCursor): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url');
}

export function decodeLineCursor(text: string): LineCursor | null {
  try {
    const c = JSON.parse(Buffer.from(text, 'base64url').toString()) as LineCursor;
    return typeof c.a === 'number' &&
      typeof c.r === 'number' &&
      typeof c.s === 'string' &&
      typeof c.i === 'number' &&
      typeof c.c === 'string'
      ? c
      : null;
  } catch {
    return null;
  }
}

/** The order of lines across pods: time, then pod set (as the job lists them), index, the pod's own order. */
export function compareLines(podSetOrder: readonly string[]) {
  const rank = (s: string) => podSetOrder.indexOf(s);
  return (x: LineCursor, y: LineCursor): number =>
    x.a - y.a || x.r - y.r || rank(x.s) - rank(y.s) || x.i - y.i || (x.c < y.c ? -1 : x.c > y.c ? 1 : 0);
}

/** A shown line's place, for compareLines, without decoding its cursor. */
export const placeOf = (l: LogLine): LineCursor => ({
  a: l.at,
  r: l.run,
  s: l.podSet,
  i: l.pod,
  c: l.podCursor,
});

/** The values of the job's environment variables marked secret: never shown in a line. */
export function secretsOf(workload: Record<string, unknown> | null | undefined): string[] {
  return (containerOf(workload)?.env ?? []).filter((e) => e.secret === true).map((e) => e.value);
}

/** A pod's lines as shown: cut to the line limit and masked (masking first: a cut never splits a secret). */
export function shownLines(
  lines: readonly BackendLogLine[],
  where: { run: number; podSet: string; pod: number },
  secrets: readonly string[],
): LogLine[] {
  return lines.map((l) => ({
    at: l.at,
    run: where.run,
    podSet: where.podSet,
    pod: where.pod,
    stream: l.stream,
    text: cutLine(maskSecrets(l.text, secrets)),
    cursor: encodeLineCursor({ a: l.at, r: where.run, s: where.podSet, i: where.pod, c: l.cursor }),
    podCursor: l.cursor,
  }));
}
