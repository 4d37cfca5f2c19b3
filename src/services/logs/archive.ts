// The archive of pods' output: written from the backend's 'pod-log' reports (once per pod of a
// run: a replay finds the row and writes nothing), read when the pods are gone, pruned by the leader.
import type { EntityManager, MikroORM } from '@mikro-orm/core';
import type { BackendEvent } from '../../backends/port.js';
import { keepLast, lineBytes } from '../../core/logs/index.js';
import { runBound, tableOf } from '../../persistence/bound-sql.js';
import { uuidv7 } from '../../persistence/ids.js';
import { type ArchivedLogLine, PodLogArchive } from '../../persistence/logs/index.js';
import { systemEntityManager } from '../../persistence/tenant-filter.js';
import type { LeaderTask, LeaderTaskContext } from '../scheduling/index.js';

type PodLogEvent = Extract<BackendEvent, { type: 'pod-log' }>;

/** Rows deleted per retention statement, and statements per run. */
const RETENTION_BATCH = 500;
const RETENTION_BATCHES_PER_RUN = 20;

/**
 * Stores a pod's output as it ended, at most `maxBytes` of its last lines: one statement, the
 * tenant read from the job within it. Idempotent: a second report of the same pod of the same run
 * (a replay, another replica) writes nothing (the unique key). A job that no longer exists is skipped.
 */
export async function archivePodLog(orm: MikroORM, event: PodLogEvent, maxBytes: number): Promise<void> {
  const em = systemEntityManager(orm);
  const kept = keepLast(event.lines, maxBytes);
  const lines: ArchivedLogLine[] = kept.lines.map((l) => ({
    at: l.at,
    stream: l.stream,
    text: l.text,
    cursor: l.cursor,
  }));
  const row: Record<string, unknown> = {
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
  const t = tableOf(em, 'PodLogArchive');
  const j = tableOf(em, 'Job');
  const names = Object.keys(row);
  try {
    await runBound(
      em,
      `insert into ${t.table} (${[...names, 'tenant'].map((n) => t.column(n)).join(', ')}) values (${names
        .map(() => '?')
        .join(
          ', ',
        )}, (select ${j.column('tenant')} from ${j.table} where ${j.column('id')} = ?)) on conflict do nothing`,
      [...names.map((n) => t.value(n, row[n])), event.jobId],
    );
  } catch (error) {
    // The job is gone (its tenant was deleted): there is nothing to keep its logs for.
    if (error instanceof Error && /null|NOT NULL|foreign key/i.test(error.message)) return;
    throw error;
  }
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
