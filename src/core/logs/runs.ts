// A job's runs from its event history: a run begins with each STARTED and ends with the event
// that took its pods away (preemption, disruption, the end of the job). Run 1 is the first start.

/** One event of the job's history as the run reader needs it. */
export interface HistoryEvent {
  type: string;
  at: number;
  message: string | null;
}

export type RunOutcome = 'running' | 'succeeded' | 'failed' | 'preempted' | 'disrupted' | 'cancelled';

export interface JobRun {
  run: number;
  /** The admission this run ran under: the last ADMITTED before its start. */
  admissionAt: number;
  startedAt: number;
  endedAt: number | null;
  outcome: RunOutcome;
  reason: string | null;
}

const ENDS: Record<string, Exclude<RunOutcome, 'running'>> = {
  SUCCEEDED: 'succeeded',
  FAILED: 'failed',
  PREEMPTED: 'preempted',
  DISRUPTED: 'disrupted',
  CANCELLED: 'cancelled',
};

/**
 * The runs, oldest first, from the events in the order they were recorded. `currentAdmissionAt`
 * (the job's admission now, when it has one) names the admission of a run still going, exactly as
 * the backend labelled its pods.
 */
export function runsOf(events: readonly HistoryEvent[], currentAdmissionAt: number | null): JobRun[] {
  const runs: JobRun[] = [];
  let admittedAt: number | null = null;
  let open: JobRun | null = null;
  for (const e of events) {
    if (e.type === 'ADMITTED') admittedAt = e.at;
    else if (e.type === 'STARTED') {
      if (open) continue; // a replayed report: the run is already going
      open = {
        run: runs.length + 1,
        admissionAt: admittedAt ?? e.at,
        startedAt: e.at,
        endedAt: null,
        outcome: 'running',
        reason: null,
      };
      runs.push(open);
    } else if (ENDS[e.type] && open) {
      open.endedAt = e.at;
      open.outcome = ENDS[e.type]!;
      open.reason = e.type === 'SUCCEEDED' ? null : e.message;
      open = null;
    }
  }
  if (open && currentAdmissionAt !== null) open.admissionAt = currentAdmissionAt;
  return runs;
}

/**
 * Which run an archived pod log belongs to: the run whose admission is the latest at or before the
 * archive's admission time (the backend's own record of it may differ by the time a write took).
 */
export function runOfAdmission(runs: readonly JobRun[], admissionAt: number): JobRun | null {
  let found: JobRun | null = null;
  for (const r of runs) if (r.admissionAt <= admissionAt) found = r;
  return found ?? runs[0] ?? null;
}
