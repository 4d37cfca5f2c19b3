// Backend reports within a leader session (leader-session.ts): grouped into one fenced transaction
// per leader turn, kept while the database fails and written after recovery, then told to the core.
import { DEFAULT_GROUP_COMMIT_MS } from '../../config/index.js';
import { afterGroupWindow } from '../../shared/index.js';
import { applyBackendEvents, type WritableBackendEvent } from './backend-events.js';
import type { CycleSession } from './leader-cycles.js';
import { StaleLeaderError } from './leader-epoch.js';
import type { LeaderHost } from './leader-host.js';

type Writable = WritableBackendEvent;

/** What the reports use of the session that receives them. */
export type ReportSession = Omit<CycleSession, 'announceWindows'>;

export class LeaderReports {
  /** Backend reports that could not be written (database down): written after recovery. */
  private readonly unwritten: Writable[] = [];
  /** Backend reports waiting for the leader's next turn: written together, in one transaction. */
  private readonly reports: Writable[] = [];
  /** Whether a turn that writes `reports` is queued and has not begun. */
  private reportsQueued = false;

  constructor(private readonly session: ReportSession) {}

  private get host(): LeaderHost {
    return this.session.host;
  }

  /**
   * A backend report. Reports that arrive within the group-commit window, or while the leader is busy
   * (a cycle, a write), are written together on its next turn: one fenced transaction for all of them.
   */
  add(event: Writable): void {
    if (this.session.ended()) return;
    this.reports.push(event);
    if (this.reportsQueued) return;
    this.reportsQueued = true;
    afterGroupWindow(this.host.options.groupCommitMs ?? DEFAULT_GROUP_COMMIT_MS, () => this.writeReports());
  }

  private writeReports(): void {
    this.session.run(async () => {
      this.reportsQueued = false;
      const batch = this.reports.splice(0);
      if (this.session.ended() || !batch.length) return;
      if (this.session.paused()) return void this.unwritten.push(...batch);
      try {
        await this.writeBackendEvents(batch);
      } catch (error) {
        // Written again after recovery (a repeated report changes nothing: states are checked).
        if (!(error instanceof StaleLeaderError)) this.unwritten.push(...batch);
        throw error;
      }
    });
  }

  /** After recovery: the reports the database refused. */
  async writeUnwritten(): Promise<void> {
    // Oldest first, in one transaction; if it fails again they stay queued for the next attempt.
    if (this.unwritten.length && !this.session.ended()) {
      const batch = this.unwritten.slice();
      await this.writeBackendEvents(batch);
      this.unwritten.splice(0, batch.length);
    }
  }

  private async writeBackendEvents(events: readonly Writable[]): Promise<void> {
    const session = this.session;
    const { finished, requeued } = await applyBackendEvents(session.writer(), events);
    if (session.ended()) return;
    const { core } = this.host;
    for (const jobId of finished) if (session.knows(jobId)) core.finish(jobId);
    const backoff = this.host.options.disruptionBackoff;
    for (const { jobId, disruptions } of requeued) {
      if (!session.knows(jobId) || core.jobState(jobId) !== 'admitted') continue;
      const holdMs = backoff
        ? Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.max(0, disruptions - 1))
        : 0;
      core.requeue(jobId, holdMs);
      // A cycle when the backoff ends, not only at the next periodic one.
      if (holdMs > 0) setTimeout(() => session.wake(), holdMs + 1).unref();
    }
    session.dispatchSoon();
    if (finished.length || requeued.length) {
      this.host.options.events.publish('scheduler-state', {
        at: events.reduce((latest, e) => Math.max(latest, e.at), 0),
      });
      // No state-change tick here: the cycle this wakes (a few ms later) ends with one, admitted
      // or not. A tick now would push every watcher an ETA-only value and, with thousands of
      // jobPosition subscribers, hold the event loop past the cycle that admits the next head.
      session.wake();
    }
  }
}
