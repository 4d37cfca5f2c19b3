// The ETA simulation (README, "ETA"): a forward run over the expected ends of running jobs and the
// pending jobs in admission order. Pure and generic over the job type: the scheduler supplies the
// trial operations (admit on its snapshot, release) and undoes everything afterwards.
import type { EtaUnknownReason } from './types.js';

/** How many pending jobs of a tree the simulation follows; later ones get `TooFarAhead`. */
export const ETA_MAX_JOBS = 100;
/** How many end events it processes before giving up on the rest with `TooFarAhead`. */
export const ETA_MAX_STEPS = 200;

export interface EtaResult {
  /** Simulated admission time (ms epoch), or null with a reason. */
  at: number | null;
  why?: EtaUnknownReason;
}

export interface EtaWorld<J> {
  now: number;
  /** Pending jobs in admission order (at most ETA_MAX_JOBS). */
  order: readonly J[];
  /** Jobs of the same StrictFIFO queue: one that does not fit blocks those behind it. */
  strictQueueOf(j: J): unknown | null;
  /** Expected run time of a job once admitted; undefined = not declared. */
  durationOf(j: J): number | undefined;
  /** Admitted jobs that hold capacity the pending jobs may need: expected end (null = unknown) and their
   * trial release.
   */
  running: readonly { end: number | null; release: () => void }[];
  /** Jobs with equal signatures fail together: once one failed at an instant, the others are not tried
   * (failures change nothing).
   */
  signatureOf(j: J): string;
  /** Trial admission on the snapshot (quota and nodes); on success returns the trial release of what it
   * took.
   */
  tryAdmit(j: J): (() => void) | null;
}

interface EndEvent {
  at: number;
  seq: number;
  release: () => void;
}

/**
 * Steps through end events in time order. At each instant every still-waiting job is tried in
 * admission order (a job that does not fit steps aside, as in BestEffortFIFO, except behind a
 * StrictFIFO head of its own queue); an admitted job ends after its declared duration. A job's ETA
 * is the instant it is admitted. No preemption, time windows or other trees' pending jobs.
 */
export function simulateEtas<J>(w: EtaWorld<J>): Map<J, EtaResult> {
  const out = new Map<J, EtaResult>();
  const events: EndEvent[] = [];
  let seq = 0;
  let unknownEnds = 0;
  const push = (e: EndEvent): void => {
    // Sorted by (at, seq): binary insertion, events are few.
    let lo = 0;
    let hi = events.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const m = events[mid] as EndEvent;
      if (m.at < e.at || (m.at === e.at && m.seq < e.seq)) lo = mid + 1;
      else hi = mid;
    }
    events.splice(lo, 0, e);
  };
  for (const r of w.running) {
    if (r.end === null) unknownEnds++;
    else push({ at: Math.max(w.now, r.end), seq: seq++, release: r.release });
  }
  const sigs = new Map<J, string>();
  for (const j of w.order) sigs.set(j, w.signatureOf(j));
  let waiting = [...w.order];
  let t = w.now;
  let steps = 0;
  let tooFar = false;
  for (;;) {
    const blocked = new Set<unknown>();
    const failed = new Set<string>();
    const still: J[] = [];
    for (const j of waiting) {
      const strict = w.strictQueueOf(j);
      const sig = sigs.get(j) as string;
      const release = (strict !== null && blocked.has(strict)) || failed.has(sig) ? null : w.tryAdmit(j);
      if (!release) {
        failed.add(sig);
        if (strict !== null) blocked.add(strict);
        still.push(j);
        continue;
      }
      out.set(j, { at: t });
      const d = w.durationOf(j);
      if (d === undefined) unknownEnds++;
      else push({ at: t + d, seq: seq++, release });
    }
    waiting = still;
    if (waiting.length === 0 || events.length === 0) break;
    if (++steps > ETA_MAX_STEPS) {
      tooFar = true;
      break;
    }
    t = (events[0] as EndEvent).at;
    while (events.length > 0 && (events[0] as EndEvent).at === t) (events.shift() as EndEvent).release();
  }
  const why: EtaUnknownReason = tooFar ? 'TooFarAhead' : unknownEnds > 0 ? 'NoDeclaredDuration' : 'NeverFits';
  for (const j of waiting) out.set(j, { at: null, why });
  return out;
}
