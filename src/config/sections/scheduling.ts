import { z } from 'zod';
import { section } from '../section.js';

/** Admission cycles run in slices of about this many ms (src/services/scheduling/leader-session.ts). */
export const DEFAULT_CYCLE_SLICE_MS = 20;

/**
 * How long a submit, and a backend report on the leader, waits for others to share its transaction
 * (group commit). On SQLite a write is synchronous: without a wait no second writer ever arrives while
 * one commits, and every job paid for its own transactions.
 */
export const DEFAULT_GROUP_COMMIT_MS = 2;

export interface SchedulingConfig {
  /** Admission cycles run in slices of about this many ms, requests answered between them (0: unsliced). */
  cycleSliceMs: number;
  /** A disrupted job waits this long before it may be admitted again, doubled per disruption up to disruptionBackoffMaxMs. */
  disruptionBackoffMs: number;
  disruptionBackoffMaxMs: number;
  /** A submit and a leader's backend report wait this long for others to share their transaction (0: none). */
  groupCommitMs: number;
}

export const schedulingSection = section({
  key: 'scheduling',
  title: 'Scheduling',
  description: 'The fair-share scheduler runs on one replica at a time (the leader), in admission cycles.',
  variables: {
    FAIRWAY_CYCLE_SLICE_MS: z.coerce
      .number()
      .int()
      .min(0)
      .max(60_000, 'must be at most 60000')
      .default(DEFAULT_CYCLE_SLICE_MS)
      .describe(
        "Milliseconds: the leader runs an admission cycle in slices of about this long, writing each slice's decisions and answering requests between slices (a 10,000-job burst no longer holds the API for seconds; same decisions as one cycle); `0`: each cycle in one piece.",
      ),
    FAIRWAY_DISRUPTION_BACKOFF_MS: z.coerce
      .number()
      .int()
      .min(0)
      .max(3_600_000, 'must be at most 3600000')
      .default(5000)
      .describe(
        "Milliseconds: a job the cluster stopped (eviction, drain, a lost node) waits this long before it may be admitted again, doubled for each further disruption of the same job (its pending reason says until when); the cluster's view of a drained or lost node reaches the inventory meanwhile. `0`: at once.",
      ),
    FAIRWAY_DISRUPTION_BACKOFF_MAX_MS: z.coerce
      .number()
      .int()
      .min(0)
      .max(86_400_000, 'must be at most 86400000')
      .default(300_000)
      .describe('Milliseconds: the longest disruption backoff, however often a job was disrupted.'),
    FAIRWAY_GROUP_COMMIT_MS: z.coerce
      .number()
      .int()
      .min(0)
      .max(100, 'must be at most 100')
      .default(DEFAULT_GROUP_COMMIT_MS)
      .describe(
        'Milliseconds: a submit (`submitJob`), and on the leader a report from the cluster (started, finished, stopped), waits this long for others to share its transaction: one commit for all of them, each caller answered after it (group commit). Adds up to this much to each answer; `0`: only what arrives in the same turn of the event loop is grouped.',
      ),
  },
  resolve: (v): SchedulingConfig => ({
    cycleSliceMs: v.FAIRWAY_CYCLE_SLICE_MS,
    disruptionBackoffMs: v.FAIRWAY_DISRUPTION_BACKOFF_MS,
    disruptionBackoffMaxMs: v.FAIRWAY_DISRUPTION_BACKOFF_MAX_MS,
    groupCommitMs: v.FAIRWAY_GROUP_COMMIT_MS,
  }),
});
