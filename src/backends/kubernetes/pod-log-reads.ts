// Reading and following one pod's log through the API (log-stream.ts), with cursors that stay the same
// whichever way the lines were read: a tail read renumbers its first group of equal timestamps (it may
// begin inside one), a read or follow after a cursor asks from the cursor's second and skips what is
// not after it. A follow whose connection drops while the pod runs is resumed that way, with backoff,
// so no line comes twice and none is lost; it ends when the pod's output is over or the pod is gone.
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from './client.js';
import {
  comparePositions,
  cursorOf,
  LineRing,
  type LogLine,
  type LogPosition,
  sinceTimeOf,
} from './log-lines.js';
import { type LogQuery, PodLogError, type PodLogTarget, streamPodLog } from './log-stream.js';
import { podOver } from './run-pods.js';

export interface PodLogDeps {
  kubeConfig: KubeConfig;
  client: KubeClient;
  /** How long the API may take to answer a request (not to finish a followed stream). */
  answerWithinMs: number;
  log(message: string): void;
}

/** Consecutive attempts without progress before a follow gives up (about 20 s of backoff). */
const MAX_ATTEMPTS = 8;
const MIN_BACKOFF_MS = 200;
const MAX_BACKOFF_MS = 5000;
/** A connection that lasted this long was no failure, even when it brought no line (a quiet pod). */
const HEALTHY_CONNECTION_MS = 10_000;
/** The first guess of a tail by bytes: lines of this many bytes on average. */
const GUESSED_LINE_BYTES = 64;

async function collect(
  deps: PodLogDeps,
  target: PodLogTarget,
  query: LogQuery,
  signal: AbortSignal,
  keep: (line: LogLine) => boolean | undefined,
): Promise<void> {
  await streamPodLog(deps.kubeConfig, target, query, {
    signal,
    answerWithinMs: deps.answerWithinMs,
    onLines: (lines) => {
      for (const line of lines) if (keep(line) === false) return false;
      return true;
    },
  });
}

/** The lines after `after` (null: all), at most the last `tailLines`; `truncated`: earlier ones were left out. */
export async function readPodLog(
  deps: PodLogDeps,
  target: PodLogTarget,
  after: LogPosition | null,
  tailLines: number | undefined,
  signal = new AbortController().signal,
): Promise<{ lines: LogLine[]; truncated: boolean }> {
  if (tailLines !== undefined) tailLines = Math.floor(tailLines);
  if (tailLines !== undefined && !(tailLines > 0)) return { lines: [], truncated: true };
  if (after || tailLines === undefined) {
    const ring = new LineRing({ lines: tailLines });
    const query = after ? { sinceTime: sinceTimeOf(after) } : {};
    await collect(deps, target, query, signal, (line) => {
      if (!after || comparePositions(line, after) > 0) ring.push(line);
      return true;
    });
    return { lines: ring.lines(), truncated: ring.dropped };
  }
  // One line more than asked: whether lines were left out, and the timestamp before the first kept.
  const lines: LogLine[] = [];
  await collect(deps, target, { tailLines: tailLines + 1 }, signal, (line) => void lines.push(line));
  if (lines.length <= tailLines) return { lines, truncated: false };
  const [before] = lines.splice(0, 1);
  if (before && lines[0] && before.ts === lines[0].ts) await renumberFirstGroup(deps, target, lines, signal);
  return { lines, truncated: true };
}

/**
 * The last lines of the log that fit in `maxBytes` (text bytes and a newline each). The API tails by
 * lines only: asked for a guess of lines first, then four times as many while what came is short of
 * the bytes and earlier lines were left out (a line is at least its newline, so it ends).
 */
export async function readPodLogTail(
  deps: PodLogDeps,
  target: PodLogTarget,
  maxBytes: number,
  signal: AbortSignal,
): Promise<{ lines: LogLine[]; truncated: boolean }> {
  for (let lines = Math.ceil(maxBytes / GUESSED_LINE_BYTES); ; lines *= 4) {
    const tail = await readPodLog(deps, target, null, Math.min(lines, maxBytes), signal);
    const ring = new LineRing({ bytes: maxBytes });
    for (const line of tail.lines) ring.push(line);
    if (!tail.truncated || ring.dropped || lines >= maxBytes)
      return { lines: ring.lines(), truncated: tail.truncated || ring.dropped };
  }
}

/**
 * A tail began inside a group of equal timestamps: its numbers count from the tail's start, not the
 * group's. The group is counted from its second (sinceTime) and the tail's part of it renumbered as
 * the group's last lines.
 */
async function renumberFirstGroup(
  deps: PodLogDeps,
  target: PodLogTarget,
  lines: LogLine[],
  signal: AbortSignal,
): Promise<void> {
  const ts = lines[0]!.ts;
  const inTail = lines.findIndex((l) => l.ts !== ts);
  const own = inTail === -1 ? lines.length : inTail;
  let total = 0;
  const stop = new AbortController();
  const abort = () => stop.abort();
  signal.addEventListener('abort', abort, { once: true });
  try {
    await collect(deps, target, { sinceTime: sinceTimeOf(lines[0]!) }, stop.signal, (line) => {
      if (line.ts > ts) return false;
      if (line.ts === ts) total++;
      return true;
    });
  } finally {
    signal.removeEventListener('abort', abort);
  }
  const first = Math.max(0, total - own);
  for (let i = 0; i < own; i++) {
    const line = lines[i]!;
    line.n = first + i;
    line.cursor = cursorOf(line);
  }
}

/** `pending`: not started yet (unscheduled, pulling its image): a follow waits for it, however long. */
type PodState = 'gone' | 'over' | 'pending' | 'running';

async function podState(deps: PodLogDeps, target: PodLogTarget): Promise<PodState> {
  try {
    const pod = await deps.client.read<V1Pod>({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: target.pod, namespace: target.namespace },
    });
    if (!pod || pod.metadata?.uid !== target.uid) return 'gone';
    if (podOver(pod)) return 'over';
    return pod.status?.phase === 'Pending' ? 'pending' : 'running';
  } catch {
    // Not known: as if it ran (the follow tries again, boundedly).
    return 'running';
  }
}

export interface FollowSink {
  lines(lines: LogLine[]): void;
  /** `read`: the log was read at all (a pod gone before its first read was not). */
  end(outcome: { read: boolean; truncated: boolean }): void;
}

export interface FollowStart {
  after: LogPosition | null;
  /** Only the last lines, up to this many bytes, of what the log holds at the start (with `after` null). */
  tailBytes?: number;
  /** The pod is over already: one read, no follow. */
  over?: boolean;
}

/** Follows the pod's log (see the file's comment); returns the function that stops it (no `end` then). */
export function followPodLog(
  deps: PodLogDeps,
  target: PodLogTarget,
  start: FollowStart,
  sink: FollowSink,
): () => void {
  const controller = new AbortController();
  const { signal } = controller;
  let after = start.after;
  let read = false;
  let truncated = false;
  const deliver = (lines: LogLine[]) => {
    const fresh = after ? lines.filter((l) => comparePositions(l, after!) > 0) : lines;
    if (!fresh.length || signal.aborted) return;
    after = fresh[fresh.length - 1]!;
    sink.lines(fresh);
  };
  const run = async () => {
    if (start.tailBytes !== undefined && !after) {
      try {
        const tail = await readPodLogTail(deps, target, start.tailBytes, signal);
        read = true;
        truncated = tail.truncated;
        deliver(tail.lines);
        if (start.over) return;
      } catch (error) {
        // Gone, or stopped; anything else: the follow below reads from the start instead.
        if (signal.aborted || (error instanceof PodLogError && error.status === 404)) return;
      }
    }
    let failures = 0;
    let final = false;
    for (;;) {
      const openedAt = Date.now();
      let delivered = false;
      let waiting = false;
      try {
        await streamPodLog(
          deps.kubeConfig,
          target,
          { follow: !final, ...(after ? { sinceTime: sinceTimeOf(after) } : {}) },
          {
            signal,
            answerWithinMs: deps.answerWithinMs,
            onOpen: () => void (read = true),
            onLines: (lines) => {
              delivered = true;
              deliver(lines);
              return true;
            },
          },
        );
      } catch (error) {
        if (signal.aborted) return;
        if (error instanceof PodLogError && error.status === 404) return;
        // 400: the container has not started (or is between restarts): not a failure, wait for it.
        waiting = error instanceof PodLogError && error.status === 400;
      }
      if (signal.aborted || final) return;
      const state = await podState(deps, target);
      if (signal.aborted || state === 'gone') return;
      // Over: one more read without follow from the last line, for what a cut stream missed.
      if (state === 'over') {
        final = true;
        continue;
      }
      waiting ||= state === 'pending';
      failures = delivered || Date.now() - openedAt >= HEALTHY_CONNECTION_MS || waiting ? 0 : failures + 1;
      if (failures >= MAX_ATTEMPTS) {
        deps.log(
          `stopped following the log of pod ${target.namespace}/${target.pod}: ${MAX_ATTEMPTS} attempts in a row brought nothing`,
        );
        return;
      }
      const backoff = waiting ? 1000 : Math.min(MIN_BACKOFF_MS * 2 ** failures, MAX_BACKOFF_MS);
      await new Promise((resolve) => setTimeout(resolve, backoff).unref());
      if (signal.aborted) return;
    }
  };
  run()
    .catch((error: unknown) => {
      if (!signal.aborted && !(error instanceof PodLogError && error.status === 404))
        deps.log(
          `could not read the log of pod ${target.namespace}/${target.pod}: ${error instanceof Error ? error.message : String(error)}`,
        );
    })
    .finally(() => {
      if (!signal.aborted) sink.end({ read, truncated });
    });
  return () => controller.abort();
}
