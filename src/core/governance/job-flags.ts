// A governance flag as stored on a job (Job.governanceFlag), shown to its owner and written into the
// events that tell them: the core's JobFlag with its durations in declared time (what the owner and the
// policy speak in) and the policy's name, and the sentence with the numbers.
import type { IdleAction, JobFlag } from './types.js';

/**
 * Job.governanceFlag: the core's flag with `forMs` and `limitMs` in declared time (the backend's ms ×
 * its time scale: on the simulated cluster at 60 a real minute is a declared hour); `since` and `at`
 * are instants (ms epoch). `policy` names the queue's isolation policy that decided.
 */
export interface StoredJobFlag extends JobFlag {
  policy: string;
}

/** The core's flag (backend ms) → the stored one (declared ms). */
export function declaredFlag(flag: JobFlag, timeScale: number, policy: string): StoredJobFlag {
  return {
    ...flag,
    forMs: Math.round(flag.forMs * timeScale),
    limitMs: Math.round(flag.limitMs * timeScale),
    policy,
  };
}

/** The stored column → a flag, or null when it holds none (or something that is not one). */
export function storedFlagOf(value: unknown): StoredJobFlag | null {
  if (!value || typeof value !== 'object') return null;
  const v = value as Partial<StoredJobFlag>;
  if (
    (v.kind !== 'IDLE' && v.kind !== 'NOT_RUNNING') ||
    typeof v.since !== 'number' ||
    typeof v.at !== 'number'
  )
    return null;
  return value as StoredJobFlag;
}

/** The preemption reason a flag's reclaim is recorded with (Preemption.reason, PREEMPTED events). */
export function reclaimReasonOf(flag: Pick<JobFlag, 'kind'>): 'idle' | 'not-running' {
  return flag.kind === 'IDLE' ? 'idle' : 'not-running';
}

const ACTION_TEXT: Record<IdleAction, string> = {
  NOTIFY: 'notify',
  RECLAIM_IF_BORROWING: 'reclaim if borrowing',
  RECLAIM: 'reclaim',
};

const percent = (share: number | null) => `${Math.round((share ?? 0) * 100)}%`;

/** A declared duration in the unit a person reads it in. */
export function durationText(ms: number): string {
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 120 * 60_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 360_000) / 10} h`;
}

/**
 * The sentence the owner reads, with the numbers: e.g. "GPU utilization 2% < 10% for 31 min (policy
 * elastic: reclaim if borrowing)", and what came of it.
 */
export function flagMessage(flag: StoredJobFlag): string {
  const rule = `(policy ${flag.policy}: ${ACTION_TEXT[flag.action]})`;
  const head =
    flag.kind === 'IDLE'
      ? `GPU utilization ${percent(flag.meanUtilization)} < ${percent(flag.utilizationBelow)} for ${durationText(flag.forMs)} ${rule}`
      : `Admitted ${durationText(flag.forMs)} ago and still not running (limit ${durationText(flag.limitMs)}) ${rule}`;
  if (flag.decision === 'RECLAIM')
    return `${head}: ${flag.action === 'RECLAIM_IF_BORROWING' ? 'its queue borrows, so ' : ''}its GPUs are reclaimed and it goes back to pending.`;
  if (flag.action === 'RECLAIM_IF_BORROWING')
    return `${head}: its queue is within its quota, so it keeps its GPUs for now.`;
  return `${head}: it keeps its GPUs.`;
}

/**
 * What a PREEMPTED job event and tenant event say of a governance reclaim ('idle' / 'not-running'):
 * the flag's sentence and the flag itself; null for any other preemption or a job without its flag.
 */
export function reclaimNotice(
  governanceFlag: unknown,
  reason: string,
): { message: string; flag: StoredJobFlag } | null {
  if (reason !== 'idle' && reason !== 'not-running') return null;
  const flag = storedFlagOf(governanceFlag);
  if (!flag || reclaimReasonOf(flag) !== reason) return null;
  return { message: flagMessage(flag).slice(0, 500), flag };
}
