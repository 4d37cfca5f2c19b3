// Did every jobLogs follower get every line once? A simulated single-pod job's rank 0 writes step k
// at startedAt + round(k × step ÷ scale) (src/core/logs/simulated-log.ts), so from any step line the
// run's start and what it had written by a given time follow exactly. Checked per follower, from
// its first (backlog) step on: lines seen twice, lines out of order, steps missing between its first
// one and the last written by `cut` (or, at the end, its last), and whether a cancelled stream ended
// with the pod's last line right after its last step.
import type { Follower } from './followers.js';
import { STEP_MS } from './setup.js';

export interface Completeness {
  followers: number;
  /** Step lines the followers should have had (from each one's first step to the last written by the cut). */
  expected: number;
  duplicates: number;
  outOfOrder: number;
  missing: number;
  followersMissing: number;
  /** At the end: streams that ended with the last line (SIGTERM…) right after their last step. */
  endedWithLastLine?: number;
  ended?: number;
}

/**
 * `cut`: steps written by then must have arrived (the window's end, checked after a grace); without
 * it, the whole stream up to its last step (after the jobs were cancelled).
 */
export function completeness(followers: readonly Follower[], timeScale: number, cut?: number): Completeness {
  const out: Completeness = {
    followers: 0,
    expected: 0,
    duplicates: 0,
    outOfOrder: 0,
    missing: 0,
    followersMissing: 0,
  };
  if (cut === undefined) {
    out.ended = 0;
    out.endedWithLastLine = 0;
  }
  for (const f of followers) {
    const steps = f.lines.filter((l) => l.isStep);
    const first = steps[0];
    if (!first) continue;
    out.followers++;
    const keys = new Set<string>();
    let previous = '';
    for (const l of f.lines) {
      if (keys.has(l.key)) out.duplicates++;
      keys.add(l.key);
      if (l.key < previous) out.outOfOrder++;
      previous = l.key > previous ? l.key : previous;
    }
    const have = new Set(steps.map((l) => l.step));
    const lastSeen = Math.max(...have);
    const startedAt = first.at - Math.round((first.step * STEP_MS) / timeScale);
    const lastWritten =
      cut === undefined ? lastSeen : Math.floor(((Math.floor(cut) - startedAt) * timeScale) / STEP_MS);
    const upTo = Math.max(lastWritten, lastSeen);
    let missing = 0;
    for (let k = first.step + 1; k <= upTo; k++) if (!have.has(k)) missing++;
    out.expected += Math.max(0, lastWritten - first.step);
    out.missing += missing;
    if (missing) out.followersMissing++;
    if (cut === undefined && f.messages.some((m) => m.ended)) {
      out.ended!++;
      const last = f.lines.at(-1)!;
      if (!last.isStep && last.step === lastSeen + 1) out.endedWithLastLine!++;
    }
  }
  return out;
}
