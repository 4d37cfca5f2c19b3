// Job.logs: a run's lines, newest last, from the cluster while its pods exist and from the
// archive once they are gone; masked and cut, filtered and paged as the caller asks.
import type { EntityManager } from '@mikro-orm/core';
import type { BackendLogPod, BackendLogRun, BackendLogs } from '../../backends/port.js';
import { type JobRun, runOfAdmission, selectLines } from '../../core/logs/index.js';
import type { JobView } from '../../persistence/jobs/index.js';
import { badInput, forbidden } from '../../shared/index.js';
import type { ServiceContext } from '../context.js';
import { mayReadContent } from '../tenancy/index.js';
import { archivedLines, archivedPods } from './archive.js';
import { compareLines, decodeLineCursor, type LogLine, placeOf, secretsOf, shownLines } from './lines.js';
import { backendRun, jobRuns, podsOfRun } from './runs.js';

export const DEFAULT_LOG_TAIL = 500;
export const MAX_LOG_TAIL = 10_000;

export interface LogQuery {
  run?: number | null;
  podSet?: string | null;
  pod?: number | null;
  tail?: number | null;
  since?: Date | null;
  contains?: string | null;
  /** A line's cursor: only lines before it (paging back). */
  before?: string | null;
}

export interface LogPage {
  /** The run shown (null: the job has not run yet). */
  run: number | null;
  runs: number;
  lines: LogLine[];
  /** Lines before these exist (page back with `before`), or were left out of an archive. */
  hasEarlier: boolean;
  /** Whether any pod's lines came from the archive (its pod was gone). */
  archived: boolean;
}

export const CONTENT_REFUSED =
  "You may not read this job's content (container, environment, data paths, logs).";

/** Checks the caller may read the job's content (logs are content); throws FORBIDDEN otherwise. */
export async function requireLogReader(ctx: ServiceContext, job: JobView): Promise<void> {
  if (!(await mayReadContent(ctx, job))) throw forbidden(CONTENT_REFUSED);
}

/** The pods asked for, checked against the run's pod sets (BAD_USER_INPUT naming them). */
export function selectedPods(
  run: BackendLogRun,
  podSet: string | null | undefined,
  pod: number | null | undefined,
): BackendLogPod[] {
  if (podSet != null && !run.podSets.some((p) => p.name === podSet))
    throw badInput(
      `podSet "${podSet}" is not one of the job's: ${run.podSets.map((p) => p.name).join(', ')}.`,
    );
  if (pod != null && (!Number.isInteger(pod) || pod < 0))
    throw badInput('pod must be a pod index, 0 or more.');
  const pods = podsOfRun(run).filter(
    (p) => (podSet == null || p.podSet === podSet) && (pod == null || p.index === pod),
  );
  if (pod != null && pods.length === 0)
    throw badInput(`The job has no pod ${pod}${podSet ? ` in "${podSet}"` : ''}.`);
  return pods;
}

/** Reads one run's lines, every pod asked for: from the cluster where it still holds the pod, else the archive. */
export async function runLines(
  em: EntityManager,
  logs: BackendLogs | undefined,
  job: JobView,
  runs: readonly JobRun[],
  run: JobRun,
  pods: readonly BackendLogPod[],
  options: { tailLines?: number; after?: ReadonlyMap<string, string> } = {},
): Promise<{ lines: LogLine[]; archived: boolean; truncated: boolean; missing: number }> {
  const brun = backendRun(job, run);
  const live =
    logs && run.outcome === 'running'
      ? new Set((await logs.pods(brun)).map((p) => `${p.podSet}/${p.index}`))
      : new Set<string>();
  const rows = (await archivedPods(em, job.id)).filter(
    (row) => runOfAdmission(runs, row.admissionAt)?.run === run.run,
  );
  const secrets = secretsOf(job.workload);
  const out: LogLine[] = [];
  let archived = false;
  let truncated = false;
  let missing = 0;
  const fromArchive: { pod: BackendLogPod; rowId: string }[] = [];
  for (const pod of pods) {
    const key = `${pod.podSet}/${pod.index}`;
    const after = options.after?.get(key) ?? null;
    const read =
      live.has(key) && logs ? await logs.read(brun, pod, { after, tailLines: options.tailLines }) : null;
    if (read) {
      out.push(...shownLines(read, { run: run.run, podSet: pod.podSet, pod: pod.index }, secrets));
      continue;
    }
    const row = rows.find((r) => r.podSet === pod.podSet && r.podIndex === pod.index);
    if (row) fromArchive.push({ pod, rowId: row.id });
    else missing++;
  }
  const stored = await archivedLines(
    em,
    fromArchive.map((a) => a.rowId),
  );
  for (const { pod, rowId } of fromArchive) {
    const row = stored.get(rowId);
    if (!row) continue;
    archived = true;
    truncated ||= row.truncated;
    const after = options.after?.get(`${pod.podSet}/${pod.index}`) ?? null;
    const lines = after === null ? row.lines : row.lines.filter((l) => l.cursor > after);
    out.push(...shownLines(lines, { run: run.run, podSet: pod.podSet, pod: pod.index }, secrets));
  }
  const order = compareLines(job.podSets.map((p) => p.name));
  out.sort((x, y) => order(placeOf(x), placeOf(y)));
  return { lines: out, archived, truncated, missing };
}

/** Job.logs. */
export async function readJobLogs(
  ctx: ServiceContext,
  logs: BackendLogs | undefined,
  job: JobView,
  query: LogQuery,
): Promise<LogPage> {
  await requireLogReader(ctx, job);
  const tail = query.tail ?? DEFAULT_LOG_TAIL;
  if (!Number.isInteger(tail) || tail < 1 || tail > MAX_LOG_TAIL)
    throw badInput(`tail must be between 1 and ${MAX_LOG_TAIL}.`);
  const before = query.before ? decodeLineCursor(query.before) : null;
  if (query.before && !before) throw badInput('before is not a cursor of this job’s lines.');
  const runs = await jobRuns(ctx.em, job);
  if (query.run != null && (!Number.isInteger(query.run) || query.run < 1 || query.run > runs.length))
    throw badInput(
      runs.length ? `run must be between 1 and ${runs.length}.` : 'The job has not run yet: it has no logs.',
    );
  const run =
    query.run != null ? runs[query.run - 1]! : ((before ? runs[before.r - 1] : runs.at(-1)) ?? null);
  if (!run) return { run: null, runs: 0, lines: [], hasEarlier: false, archived: false };
  const pods = selectedPods(backendRun(job, run), query.podSet, query.pod);
  // Without filters that need every line, each pod's last `tail` are enough.
  const filtered = query.since != null || (query.contains ?? '') !== '' || before !== null;
  const read = await runLines(ctx.em, logs, job, runs, run, pods, filtered ? {} : { tailLines: tail });
  const order = compareLines(job.podSets.map((p) => p.name));
  const candidates = before ? read.lines.filter((l) => order(placeOf(l), before) < 0) : read.lines;
  const matching = selectLines(candidates, {
    since: query.since?.getTime() ?? null,
    contains: query.contains,
  });
  const lines = matching.slice(-tail);
  return {
    run: run.run,
    runs: runs.length,
    lines,
    hasEarlier: matching.length > lines.length || (!filtered && read.lines.length >= tail) || read.truncated,
    archived: read.archived,
  };
}
