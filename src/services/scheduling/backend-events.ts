import type { BackendEvent } from '../../backends/port.js';
import { Job } from '../../persistence/scheduling-entities.js';
import { writeFenced, type FencedWriter } from './cycle-writer.js';
import { recordJobEvent, recordOutbox } from './outbox.js';

/**
 * Writes what the backend reported about a run (started, succeeded, failed, not running) in one fenced
 * transaction. Returns whether the job finished (its quota and GPUs are free again).
 * Reports about a run that was since preempted or cancelled are stale and change nothing.
 */
export async function applyBackendEvent(writer: FencedWriter, event: Exclude<BackendEvent, { type: 'utilization' }>): Promise<{ finished: boolean }> {
  const at = new Date(event.at);
  let finished = false;
  await writeFenced(writer, async (em, jobLock) => {
    const job = await em.findOne(Job, { id: event.jobId }, { populate: ['queue'], ...jobLock });
    if (!job || (job.state !== 'ADMITTED' && job.state !== 'RUNNING')) return;
    if (event.type === 'not-running') {
      // Reported once per admission by the backend; a job already running has moved on.
      if (job.state !== 'ADMITTED') return;
      const message = event.message.slice(0, 500);
      recordJobEvent(em, job, 'ADMITTED_NOT_RUNNING', at, 'AdmittedNotRunning', message);
      recordOutbox(em, 'job.not-running', { jobId: job.id, tenantId: job.tenant.id, queueId: job.queue.id, message, at: event.at });
    } else if (event.type === 'started') {
      if (job.state !== 'ADMITTED') return;
      job.state = 'RUNNING';
      job.startedAt = at;
      // The hold the ledger charges starts when the backend says the job runs.
      job.meteredFrom = event.at;
      recordJobEvent(em, job, 'STARTED', at, null, 'Running on the backend');
      recordOutbox(em, 'job.started', { jobId: job.id, queueId: job.queue.id, at: event.at });
    } else {
      const state = event.type === 'succeeded' ? 'SUCCEEDED' : 'FAILED';
      await writer.metering.charge(em, [job], event.at, event.type);
      job.state = state;
      job.finishedAt = at;
      job.exitReason = event.type === 'failed' ? event.reason.slice(0, 500) : null;
      recordJobEvent(em, job, state, at, event.type === 'failed' ? 'BackendFailure' : null, event.type === 'failed' ? event.reason : 'Completed');
      recordOutbox(em, 'job.finished', { jobId: job.id, queueId: job.queue.id, state, at: event.at });
      finished = true;
    }
  });
  return { finished };
}
