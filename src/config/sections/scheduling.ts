import { z } from 'zod';
import { section } from '../section.js';

/** Admission cycles run in slices of about this many ms (src/services/scheduling/leader-session.ts). */
export const DEFAULT_CYCLE_SLICE_MS = 20;

export interface SchedulingConfig {
  /** Admission cycles run in slices of about this many ms, requests answered between them (0: unsliced). */
  cycleSliceMs: number;
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
  },
  resolve: (v): SchedulingConfig => ({ cycleSliceMs: v.FAIRWAY_CYCLE_SLICE_MS }),
});
