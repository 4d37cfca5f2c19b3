// jobLogs: a job's lines as they are written, run after run, until the job ends. Each follower
// follows the pods of the current run through the backend, drains a run that ended (from the
// cluster, else the archive), and moves to the next run when the job is admitted again. Lines are
// sent in batches every flush interval; a reader that lets more than the buffer wait is ended
// (RATE_LIMITED) rather than making the gateway hold more. Each batch carries a cursor: given
// back as `after`, a new stream (on any replica) goes on from there, no line twice.
import type { MikroORM } from '@mikro-orm/core';
import { Repeater } from '@repeaterjs/repeater';
import type { BackendLogPod, BackendLogs } from '../../backends/port.js';
import type { JobRun } from '../../core/logs/index.js';
import type { EventBus } from '../../events/index.js';
import { Job } from '../../persistence/jobs/index.js';
import { systemEntityManager } from '../../persistence/tenant-filter.js';
import { badInput, FairwayError } from '../../shared/index.js';
import type { LogFanout } from './fanout.js';
import { type LogLine, secretsOf } from './lines.js';
import { MAX_LOG_TAIL, runLines, selectedPods } from './read.js';
import { backendRun, jobRuns } from './runs.js';

export interface LogBatch {
  run: number | null;
  lines: LogLine[];
  /** Give it back as `after` to go on from here. */
  cursor: string;
  /** The last batch: the job ended and every line of its last run was sent. */
  ended: boolean;
}

export interface FollowDeps {
  orm: MikroORM;
  logs: BackendLogs | undefined;
  /** The backend's follows, shared by every stream of a pod (one per process, over `logs`). */
  fanout: LogFanout | undefined;
  events: EventBus;
  /** Lines a follower may have waiting before it is ended. */
  bufferLines: number;
  /** Lines gathered this long are sent as one batch. */
  flushMs: number;
  /** How often the follower looks at the job again besides its events (missed events, an archive written late). */
  recheckMs?: number;
  /** Open streams, so the service can end them (and wait for their reads) before the database closes. */
  open?: Set<() => Promise<void>>;
}

export interface FollowQuery {
  podSet?: string | null;
  pod?: number | null;
  /** Lines of the current run sent first when not resuming (default 100). */
  tail?: number | null;
  /** A batch's cursor: go on after it. */
  after?: string | null;
}

interface StreamCursor {
  r: number;
  /** `podSet/index` → the backend's cursor of the last line sent. */
  p: Record<string, string>;
}

const encodeStream = (c: StreamCursor) => Buffer.from(JSON.stringify(c)).toString('base64url');

export function decodeStreamCursor(text: string): StreamCursor {
  try {
    const c = JSON.parse(Buffer.from(text, 'base64url').toString()) as StreamCursor;
    if (Number.isInteger(c.r) && c.r >= 1 && c.p && typeof c.p === 'object') return c;
  } catch {
    // the message below
  }
  throw badInput('after is not a cursor of this job’s log stream.');
}

/** Lines of the current run a new (not resumed) stream starts with. */
export const DEFAULT_FOLLOW_TAIL = 100;

const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);
/** How long after a run ended its archive may still be on its way (the backend reports it as the pods go). */
const ARCHIVE_WAIT_MS = 10_000;

/** The stream of a job's log batches (the caller checked it may read them). */
export function followJobLogs(deps: FollowDeps, jobId: string, query: FollowQuery): AsyncIterable<LogBatch> {
  const after = query.after ? decodeStreamCursor(query.after) : null;
  const tail = query.tail ?? DEFAULT_FOLLOW_TAIL;
  if (!Number.isInteger(tail) || tail < 0 || tail > MAX_LOG_TAIL)
    throw badInput(`tail must be between 0 and ${MAX_LOG_TAIL}.`);
  return new Repeater<LogBatch>(async (push, stop) => {
    let run: number | null = after?.r ?? null;
    let positions = new Map(Object.entries(after?.p ?? {}));
    let backlogDone = after !== null;
    const followers = new Map<string, () => void>();
    /** When this stream first saw each ended run (the wait for its archive counts from there). */
    const endSeen = new Map<number, number>();
    let pending: LogLine[] = [];
    let inFlight = false;
    let flushTimer: NodeJS.Timeout | null = null;
    let closed = false;
    let reconciling: Promise<void> | null = null;
    let again = false;

    const cursor = () => encodeStream({ r: run ?? 1, p: Object.fromEntries(positions) });
    const append = (lines: readonly LogLine[]) => {
      if (closed || lines.length === 0) return;
      for (const l of lines) positions.set(`${l.podSet}/${l.pod}`, l.podCursor);
      pending.push(...lines);
      if (pending.length > deps.bufferLines) {
        finish(
          new FairwayError(
            'RATE_LIMITED',
            `This log stream was ended: more than ${deps.bufferLines} lines waited for the reader. Resume with the last batch's cursor (after), or read them with Job.logs.`,
          ),
        );
        return;
      }
      flushTimer ??= setTimeout(flush, deps.flushMs);
    };
    const flush = async (): Promise<void> => {
      flushTimer = null;
      if (closed || inFlight || pending.length === 0) return;
      const lines = pending;
      pending = [];
      inFlight = true;
      try {
        await push({ run, lines, cursor: cursor(), ended: false });
      } finally {
        inFlight = false;
      }
      if (pending.length) flushTimer ??= setTimeout(flush, deps.flushMs);
    };
    const stopFollowers = () => {
      for (const stopOne of followers.values()) stopOne();
      followers.clear();
    };
    const finish = (error?: Error) => {
      if (closed) return;
      closed = true;
      deps.open?.delete(shutDown);
      stopFollowers();
      if (flushTimer) clearTimeout(flushTimer);
      clearInterval(recheck);
      void subscription.return?.();
      stop(error);
    };

    /** Looks at the job and its runs, and follows, drains or moves on accordingly. */
    const reconcile = (): Promise<void> => {
      if (closed) return Promise.resolve();
      if (reconciling) {
        again = true;
        return reconciling;
      }
      reconciling = (async () => {
        try {
          do {
            again = false;
            await step();
          } while (again && !closed);
        } catch (error) {
          finish(error instanceof Error ? error : new Error(String(error)));
        } finally {
          reconciling = null;
        }
      })();
      return reconciling;
    };
    /** Ends the stream and waits for the read under way (the database is about to close). */
    const shutDown = async (): Promise<void> => {
      const reading = reconciling;
      finish();
      await reading;
    };
    deps.open?.add(shutDown);

    const step = async (): Promise<void> => {
      const em = systemEntityManager(deps.orm);
      const job = await em.findOne(Job, { id: jobId });
      if (!job || closed) return finish();
      const runs = await jobRuns(em, job);
      const secrets = secretsOf(job.workload);
      while (!closed) {
        const current: JobRun | undefined = run === null ? runs.at(-1) : runs[run - 1];
        if (!current) break; // not started (yet, or again)
        if (run === null) run = current.run;
        const pods = selectedPods(backendRun(job, current), query.podSet, query.pod);
        if (!backlogDone) {
          backlogDone = true;
          // tail 0: nothing of the past, but its end is where the follow starts (each pod's last line).
          const read = await runLines(em, deps.logs, job, runs, current, pods, {
            tailLines: Math.max(1, tail),
          });
          for (const l of read.lines) positions.set(`${l.podSet}/${l.pod}`, l.podCursor);
          if (tail > 0) append(read.lines.slice(-tail));
        }
        if (current.outcome === 'running') {
          follow(job, current, pods, secrets);
          break;
        }
        // The run ended: what its pods wrote since, from the cluster or the archive, then the next run.
        stopFollowers();
        const drained = await runLines(em, deps.logs, job, runs, current, pods, { after: positions });
        append(drained.lines);
        if (drained.missing > 0) {
          // Pods neither the cluster nor the archive holds: the archive is on its way (reported as the
          // pods go), for a while; a pod that left nothing is given up on after that.
          const seen = endSeen.get(current.run) ?? Date.now();
          endSeen.set(current.run, seen);
          if (Date.now() - seen < ARCHIVE_WAIT_MS) {
            setTimeout(() => void reconcile(), 200).unref();
            break;
          }
        }
        if (current.run === runs.length) {
          if (TERMINAL.has(job.state)) {
            await flush();
            if (!closed) {
              await push({ run, lines: pending.splice(0), cursor: cursor(), ended: true });
              finish();
            }
          }
          break;
        }
        run = current.run + 1;
        positions = new Map();
      }
    };

    const follow = (
      job: Job,
      current: JobRun,
      pods: readonly BackendLogPod[],
      secrets: readonly string[],
    ) => {
      if (!deps.fanout) return;
      const brun = backendRun(job, current);
      for (const pod of pods) {
        const key = `${current.run}/${pod.podSet}/${pod.index}`;
        if (followers.has(key)) continue;
        followers.set(
          key,
          deps.fanout.follow(brun, pod, positions.get(`${pod.podSet}/${pod.index}`) ?? null, secrets, {
            lines: append,
            end: () => void 0,
          }),
        );
      }
    };

    const subscription = deps.events.subscribe('job-updated', jobId)[Symbol.asyncIterator]();
    const recheck = setInterval(() => void reconcile(), deps.recheckMs ?? 15_000);
    recheck.unref();
    stop.then(() => finish());
    void (async () => {
      for (;;) {
        const next = await subscription.next();
        if (next.done || closed) return;
        await reconcile();
      }
    })();
    await reconcile();
    await stop;
  });
}
