import type { EntityManager } from '@mikro-orm/core';
import type { BackendEvent } from '../../backends/port.js';
import { insertRows, updateRows } from '../../persistence/bound-sql.js';
import { Job, type JobEventType } from '../../persistence/jobs/index.js';
import { findPlain } from '../../persistence/plain-rows.js';
import { jobEventRow, type OutboxKind, outboxRow } from '../../persistence/scheduling/index.js';
import { backToPending, type FencedWriter, writeFenced } from './cycle-writer.js';

export type WritableBackendEvent = Exclude<BackendEvent, { type: 'utilization' | 'pod-log' }>;

/**
 * Writes what the backend reported about runs (started, succeeded, failed, not running) in one
 * fenced transaction, in the order reported: the reports that arrived while the leader was busy
 * cost one epoch check, one read of their jobs, and one flush, not one of each per report.
 * Returns the jobs that finished (their quota and GPUs are free again).
 * Reports about a run that was since preempted or cancelled are stale and change nothing.
 */
export async function applyBackendEvents(
  writer: FencedWriter,
  events: readonly WritableBackendEvent[],
): Promise<{ finished: string[]; requeued: { jobId: string; disruptions: number }[] }> {
  const finished: string[] = [];
  const requeued: { jobId: string; disruptions: number }[] = [];
  if (!events.length) return { finished, requeued };
  // A run's only report in the batch being `started` (the common case) is written without loading its job.
  const reports = new Map<string, number>();
  for (const e of events) reports.set(e.jobId, (reports.get(e.jobId) ?? 0) + 1);
  type Started = Extract<WritableBackendEvent, { type: 'started' }>;
  const startsOnly = events.filter((e): e is Started => e.type === 'started' && reports.get(e.jobId) === 1);
  const others = events.filter((e) => !(e.type === 'started' && reports.get(e.jobId) === 1));
  await writeFenced(writer, async (em, jobLock) => {
    finished.length = 0; // a retried transaction starts over
    requeued.length = 0;
    if (startsOnly.length) await writeStarts(em, startsOnly);
    if (!others.length) return;
    const ids = [...new Set(others.map((e) => e.jobId))].sort();
    // Plain rows (plain-rows.ts), locked where rows lock: the changes are written below as bound UPDATEs.
    const jobs = new Map(
      (await findPlain(em, Job, { id: ids }, { forUpdate: jobLock.lockMode !== undefined })).map((j) => [
        j.id,
        j,
      ]),
    );
    // Charged once per outcome, after all the reports: a finished job is terminal, so no later
    // report in the batch moves its `meteredFrom`; each is charged up to its own report's time.
    const ends = new Map<string, number>();
    const byOutcome = { succeeded: [] as Job[], failed: [] as Job[], disrupted: [] as Job[] };
    const changed = new Set<Job>();
    const jobEvents: Record<string, unknown>[] = [];
    const outbox: Record<string, unknown>[] = [];
    const record = (job: Job, type: JobEventType, at: Date, reason: string | null, message: string) =>
      jobEvents.push(jobEventRow(job.id, job.tenant.id, type, at, reason, message));
    const recordOutbox = (kind: OutboxKind, payload: Record<string, unknown>) =>
      outbox.push(outboxRow(kind, payload));
    const stopped: { job: Job; at: number }[] = [];
    for (const event of others) {
      const job = jobs.get(event.jobId);
      // A preempted run's pods are gone: whatever the job does now, that run's charge ends.
      if (event.type === 'stopped') {
        if (job?.stoppingSince != null) stopped.push({ job, at: event.at });
        continue;
      }
      if (!job || (job.state !== 'ADMITTED' && job.state !== 'RUNNING')) continue;
      const at = new Date(event.at);
      if (event.type === 'not-running') {
        // Reported once per admission by the backend; a job already running has moved on.
        if (job.state !== 'ADMITTED') continue;
        const message = event.message.slice(0, 500);
        record(job, 'ADMITTED_NOT_RUNNING', at, 'AdmittedNotRunning', message);
        recordOutbox('job.not-running', {
          jobId: job.id,
          tenantId: job.tenant.id,
          queueId: job.queue.id,
          message,
          at: event.at,
        });
      } else if (event.type === 'started') {
        if (job.state !== 'ADMITTED') continue;
        job.state = 'RUNNING';
        job.startedAt = at;
        // The hold the ledger charges starts when the backend says the job runs.
        job.meteredFrom = event.at;
        changed.add(job);
        record(job, 'STARTED', at, null, 'Running on the backend');
        recordOutbox('job.started', { jobId: job.id, queueId: job.queue.id, at: event.at });
      } else if (event.type === 'disrupted') {
        // Charged for the time it held GPUs, up to the disruption; then back to pending with its
        // checkpoint and its original submit time, as a preempted job.
        ends.set(job.id, event.at);
        byOutcome.disrupted.push(job);
        changed.add(job);
        const reason = event.reason.slice(0, 500);
        record(
          job,
          'DISRUPTED',
          at,
          'Disrupted',
          `Stopped by the cluster, requeued: ${reason}`.slice(0, 500),
        );
        recordOutbox('job.disrupted', {
          jobId: job.id,
          tenantId: job.tenant.id,
          queueId: job.queue.id,
          reason,
          at: event.at,
        });
        requeued.push({ jobId: job.id, disruptions: job.disruptionCount + 1 });
      } else {
        const state = event.type === 'succeeded' ? 'SUCCEEDED' : 'FAILED';
        ends.set(job.id, event.at);
        byOutcome[event.type].push(job);
        job.state = state;
        job.finishedAt = at;
        job.exitReason = event.type === 'failed' ? event.reason.slice(0, 500) : null;
        changed.add(job);
        record(
          job,
          state,
          at,
          event.type === 'failed' ? 'BackendFailure' : null,
          event.type === 'failed' ? event.reason : 'Completed',
        );
        recordOutbox('job.finished', { jobId: job.id, queueId: job.queue.id, state, at: event.at });
        finished.push(job.id);
      }
    }
    for (const [closedBy, ended] of Object.entries(byOutcome) as [keyof typeof byOutcome, Job[]][]) {
      if (ended.length) await writer.metering.charge(em, ended, (job) => ends.get(job.id)!, closedBy);
    }
    for (const { job, at } of stopped) {
      await writer.metering.chargeStopping(em, [job], at);
      changed.add(job);
    }
    for (const job of byOutcome.disrupted) {
      backToPending(job);
      job.disruptionCount += 1;
    }
    // Each changed job as the batch left it (after the charge moved its `meteredFrom`), in one statement; the
    // row was read under its lock (PostgreSQL) or in SQLite's single writer, so no state guard.
    const fields = [
      'state',
      'admission',
      'admittedAt',
      'startedAt',
      'finishedAt',
      'exitReason',
      'meteredFrom',
      'disruptionCount',
      'stoppingSince',
      'stoppingUntil',
      'stoppingAdmission',
      'updatedAt',
    ] as const;
    const updatedAt = new Date();
    await updateRows(
      em,
      'Job',
      fields,
      [...changed].map((job) => {
        job.updatedAt = updatedAt;
        return { id: job.id, values: fields.map((f) => job[f]) };
      }),
    );
    await insertRows(em, 'JobEvent', jobEvents);
    await insertRows(em, 'OutboxEntry', outbox);
  });
  return { finished, requeued };
}

/**
 * `started` reports, each the only report of its run in the batch: one UPDATE per job guarded by
 * its state (a run since preempted or cancelled changes nothing, and on PostgreSQL the UPDATE
 * takes the row lock), the events and outbox rows one multi-row INSERT each. The same rows as
 * the entity path in applyBackendEvents.
 */
async function writeStarts(
  em: EntityManager,
  events: readonly Extract<WritableBackendEvent, { type: 'started' }>[],
): Promise<void> {
  const owners = new Map(
    (
      await findPlain(
        em,
        Job,
        { id: events.map((e) => e.jobId) },
        { columns: ['id', 'tenant_id', 'queue_id'] },
      )
    ).map((j) => [j.id, j] as const),
  );
  const known = events.filter((event) => owners.has(event.jobId));
  // The hold the ledger charges starts when the backend says the job runs.
  const updatedAt = new Date();
  const started = new Set(
    await updateRows(
      em,
      'Job',
      ['state', 'startedAt', 'meteredFrom', 'updatedAt'],
      known.map((event) => ({
        id: event.jobId,
        values: ['RUNNING', new Date(event.at), event.at, updatedAt],
      })),
      { property: 'state', value: 'ADMITTED' },
    ),
  );
  const jobEvents: Record<string, unknown>[] = [];
  const outbox: Record<string, unknown>[] = [];
  for (const event of known) {
    if (!started.has(event.jobId)) continue;
    const owner = owners.get(event.jobId)!;
    const at = new Date(event.at);
    jobEvents.push(jobEventRow(event.jobId, owner.tenant.id, 'STARTED', at, null, 'Running on the backend'));
    outbox.push(outboxRow('job.started', { jobId: event.jobId, queueId: owner.queue.id, at: event.at }));
  }
  await insertRows(em, 'JobEvent', jobEvents);
  await insertRows(em, 'OutboxEntry', outbox);
}

/** One report; see applyBackendEvents. */
export async function applyBackendEvent(
  writer: FencedWriter,
  event: WritableBackendEvent,
): Promise<{ finished: boolean }> {
  const { finished } = await applyBackendEvents(writer, [event]);
  return { finished: finished.length > 0 };
}
