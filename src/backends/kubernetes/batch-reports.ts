// What the cluster does to the backend's batch runs, reported as Fairway's events: started, ended,
// disrupted (the gang suspended), stopped once a suspended run's pods are gone, or not running yet.
import type { V1Job } from '@kubernetes/client-node';
import type { BackendEvent } from '../port.js';
import type { KubeClient } from './client.js';
import { finished, refOf } from './job-updates.js';
import { allStopped, removeJobServices } from './orphans.js';
import { notRunningReport, runChange, type TrackedRun } from './run-tracking.js';
import type { KubernetesSettings } from './settings.js';
import { tenantSafeMessage } from './status.js';
import type { ClusterWatches } from './watches.js';

export interface BatchReportsDeps {
  client: KubeClient;
  settings: KubernetesSettings;
  watches: ClusterWatches;
  /** The backend's batch runs by Fairway job id (backend.ts starts and forgets them). */
  tracked: Map<string, TrackedRun>;
  /** Suspended runs whose pods may still be stopping: job id → the admission they ran under. */
  stopping: Map<string, string>;
  now: () => number;
  emit(event: BackendEvent): void;
  log(message: string): void;
  logError(error: unknown): void;
  closed(): boolean;
}

export class BatchReports {
  constructor(private readonly deps: BatchReportsDeps) {}

  /** Reports what changed for the tracked run since it was last looked at (run-tracking.ts). */
  evaluate(jobId: string): void {
    const { tracked, watches, client, logError } = this.deps;
    const t = tracked.get(jobId);
    if (!t || this.deps.closed()) return;
    const { jobsById, podsById } = watches;
    const change = runChange(t, jobsById.get(jobId), podsById.get(jobId), this.deps.now);
    if (change.kind === 'started') this.deps.emit({ type: 'started', jobId, at: change.at });
    else if (change.kind === 'recheck') setTimeout(() => this.evaluate(jobId), change.afterMs).unref();
    else if (change.kind === 'succeeded') {
      tracked.delete(jobId);
      this.deps.emit({ type: 'succeeded', jobId, at: change.at });
      void removeJobServices(client, [...(watches.jobsById.get(jobId)?.values() ?? [])]).catch(logError);
    } else if (change.kind === 'failed') {
      tracked.delete(jobId);
      this.deps.emit({ type: 'failed', jobId, at: change.at, reason: change.reason });
      // A Job whose pods cannot start (an image that does not pull) would hold its GPUs forever.
      this.suspendAll(change.jobs);
      void removeJobServices(client, change.jobs).catch(logError);
    } else if (change.kind === 'disrupted') {
      // The rest of the gang stops too (it cannot go on without the lost pod); the Jobs stay,
      // suspended, for the readmission to resume them with a new placement.
      this.disrupted(jobId, change.reason, change.at);
    }
  }

  /** The run stopped by the cluster: its Jobs suspended, the job reported disrupted (requeued). */
  disrupted(jobId: string, reason: string, at = this.deps.now()): void {
    const { tracked, watches } = this.deps;
    const t = tracked.get(jobId);
    if (!t) return;
    tracked.delete(jobId);
    this.deps.log(`job ${jobId} was disrupted: ${reason}`);
    this.suspendAll([...(watches.jobsById.get(jobId)?.values() ?? [])]);
    this.deps.emit({
      type: 'disrupted',
      jobId,
      at,
      reason: tenantSafeMessage(reason, [jobId, t.job.tenant]),
    });
  }

  /** A suspended run whose pods are all gone (or ended) is reported stopped: its GPUs are free now. */
  checkStopped(jobId: string): void {
    const { stopping, watches } = this.deps;
    const admissionAt = stopping.get(jobId);
    if (admissionAt === undefined || this.deps.closed()) return;
    if (!allStopped(watches.podsById.get(jobId)?.values() ?? [], admissionAt)) return;
    stopping.delete(jobId);
    this.deps.emit({ type: 'stopped', jobId, at: this.deps.now() });
  }

  /** Each tracked run still not running `notRunningAfterMs` after its admission is reported, once. */
  checkNotRunning(): void {
    const now = this.deps.now();
    for (const [jobId, t] of this.deps.tracked) {
      const message = notRunningReport(
        t,
        this.deps.watches.podsById.get(jobId),
        now,
        this.deps.settings.notRunningAfterMs,
      );
      if (message !== undefined) this.deps.emit({ type: 'not-running', jobId, at: now, message });
    }
  }

  private suspendAll(jobs: readonly V1Job[]): void {
    for (const j of jobs)
      if (!finished(j))
        void this.deps.client.mergePatch(refOf(j), { spec: { suspend: true } }).catch(this.deps.logError);
  }
}
