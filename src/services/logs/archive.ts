// The archive of pods' output: written from the backend's 'pod-log' reports (once per pod of a
// run: a replay finds the row and writes nothing), read when the pods are gone, pruned by the leader.
import type { EntityManager, MikroORM } from '@mikro-orm/core';
import type { BackendEvent } from '../../backends/port.js';
import { keepLast, lineBytes } from '../../core/logs/index.js';
import { chunks, runBound, tableOf } from '../../persistence/bound-sql.js';
import { uuidv7 } from '../../persistence/ids.js';
import { type ArchivedLogLine, PodLogArchive } from '../../persistence/logs/index.js';
import { systemEntityManager } from '../../persistence/tenant-filter.js';
import type { LeaderTask, LeaderTaskContext } from '../scheduling/index.js';

type PodLogEvent = Extract<BackendEvent, { type: 'pod-log' }>;

/** Rows deleted per retention statement, and statements per run. */
const RETENTION_BATCH = 500;
const RETENTION_BATCHES_PER_RUN = 20;

/**
 * Stores pods' output as they ended, at most `maxBytes` of each one's last lines: one multi-row
 * statement per chunk, each row's tenant read from its job within it. Idempotent: a second report
 * of the same pod of the same run (a replay, another replica) writes nothing (the unique key). A job
 * that no longer exists is skipped (its chunk is written again row by row, so the others are kept).
 */
export async function archivePodLogs(
  orm: MikroORM,
  events: readonly PodLogEvent[],
  maxBytes: number,
): Promise<void> {
  if (!events.length) return;
  const em = systemEntityManager(orm);
  const rows = events.map((event) => archiveRow(event, maxBytes));
  const t = tableOf(em, 'PodLogArchive');
  const j = tableOf(em, 'Job');
  const names = Object.keys(rows[0]!);
  const head = `insert into ${t.table} (${[...names, 'tenant'].map((n) => t.column(n)).join(', ')}) values `;
  const tuple = `(${names.map(() => '?').join(', ')}, (select ${j.column('tenant')} from ${j.table} where ${j.column('id')} = ?))`;
  const params = (i: number) => [...names.map((n) => t.value(n, rows[i]![n])), events[i]!.jobId];
  for (const [start, size] of chunks(rows.length)) {
    const run = (from: number, count: number) =>
      runBound(
        em,
        `${head}${Array.from({ length: count }, () => tuple).join(', ')} on conflict do nothing`,
        Array.from({ length: count }, (_, k) => params(from + k)).flat(),
      );
    try {
      await run(start, size);
    } catch (error) {
      // A job is gone (its tenant was deleted): there is nothing to keep its logs for; the chunk's other
      // rows are written one by one.
      if (!isGoneJob(error)) throw error;
      if (size === 1) continue;
      for (let i = start; i < start + size; i++) {
        try {
          await run(i, 1);
        } catch (one) {
          if (!isGoneJob(one)) throw one;
        }
      }
    }
  }
}

function isGoneJob(error: unknown): boolean {
  return error instanceof Error && /null|NOT NULL|foreign key/i.test(error.message);
}

function archiveRow(event: PodLogEvent, maxBytes: number): Record<string, unknown> {
  const kept = keepLast(event.lines, maxBytes);
  const lines: ArchivedLogLine[] = kept.lines.map((l) => ({
    at: l.at,
    stream: l.stream,
    text: l.text,
    cursor: l.cursor,
  }));
  return {
    id: uuidv7(),
    job: event.jobId,
    admissionAt: event.admissionAt,
    podSet: event.pod.podSet,
    podIndex: event.pod.index,
    lines,
    truncated: event.truncated || kept.truncated,
    bytes: lines.reduce((n, l) => n + lineBytes(l), 0),
    endedAt: event.at,
    archivedAt: new Date(),
  };
}

/** The archived pods of a job (without their lines): which run (admission) and pod each is. */
export function archivedPods(em: EntityManager, jobId: string) {
  return em.find(
    PodLogArchive,
    { job: jobId },
    { fields: ['id', 'admissionAt', 'podSet', 'podIndex', 'truncated'], orderBy: { id: 'asc' } },
  );
}

/** The lines of these archive rows, by id. */
export async function archivedLines(
  em: EntityManager,
  ids: readonly string[],
): Promise<Map<string, { lines: ArchivedLogLine[]; truncated: boolean }>> {
  if (!ids.length) return new Map();
  const rows = await em.find(
    PodLogArchive,
    { id: { $in: [...ids] } },
    { fields: ['id', 'lines', 'truncated'] },
  );
  return new Map(rows.map((r) => [r.id, { lines: r.lines, truncated: r.truncated }]));
}

/** The leader's pruning of archives whose pod ended more than `retentionDays` ago. */
export function logRetentionTask(retentionDays: number, everyMs = 3_600_000): LeaderTask {
  const retentionMs = retentionDays * 86_400_000;
  return {
    name: 'log-retention',
    everyMs: () => everyMs,
    run: async (ctx: LeaderTaskContext) => {
      const before = ctx.now - retentionMs;
      for (let i = 0; i < RETENTION_BATCHES_PER_RUN && !ctx.ended(); i++) {
        let deleted = 0;
        await ctx.write(async (em) => {
          const t = tableOf(em, 'PodLogArchive');
          deleted = await runBound(
            em,
            `delete from ${t.table} where ${t.column('id')} in (select ${t.column('id')} from ${t.table} where ${t.column('endedAt')} < ? limit ?)`,
            [before, RETENTION_BATCH],
          );
        });
        if (deleted < RETENTION_BATCH) break;
      }
    },
  };
}
