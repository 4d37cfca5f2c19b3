import { z } from 'zod';
import { millis, section } from '../section.js';

/** What each pod's archive keeps of its output when the pod ends, in KiB. */
export const DEFAULT_LOG_ARCHIVE_KIB = 1024;
/** Archived logs older than this are deleted. */
export const DEFAULT_LOG_RETENTION_DAYS = 30;
/** Lines one follower may have waiting before it is dropped as too slow. */
export const DEFAULT_LOG_FOLLOW_BUFFER_LINES = 10_000;
/** How often a follower's waiting lines are sent as one event. */
export const DEFAULT_LOG_FOLLOW_FLUSH_MS = 100;

export interface LogsConfig {
  archiveBytes: number;
  retentionDays: number;
  followBufferLines: number;
  followFlushMs: number;
}

export const logsSection = section({
  key: 'logs',
  title: 'Job logs',
  description:
    "What is kept of each pod's output after the pod is gone, for how long, and how much a follower may have waiting.",
  variables: {
    FAIRWAY_LOG_ARCHIVE_KIB: z.coerce
      .number()
      .int()
      .min(1, 'must be at least 1')
      .max(64 * 1024, 'must be at most 65536 (64 MiB)')
      .default(DEFAULT_LOG_ARCHIVE_KIB)
      .describe(
        "KiB of each pod's output kept in the database when the pod ends (its last lines), so `Job.logs` answers after the pods are gone.",
      ),
    FAIRWAY_LOG_RETENTION_DAYS: z.coerce
      .number()
      .positive('must be a positive number of days')
      .max(3660, 'must be at most ten years')
      .default(DEFAULT_LOG_RETENTION_DAYS)
      .describe('Days: archived logs older than this are deleted by the leader in bounded batches.'),
    FAIRWAY_LOG_FOLLOW_BUFFER_LINES: z.coerce
      .number()
      .int()
      .min(100, 'must be at least 100')
      .max(1_000_000, 'must be at most 1000000')
      .default(DEFAULT_LOG_FOLLOW_BUFFER_LINES)
      .describe(
        'Lines a `jobLogs` follower may have waiting to be sent; a reader slower than that is ended (its stream closes with an error) rather than making the gateway hold more.',
      ),
    FAIRWAY_LOG_FOLLOW_FLUSH_MS: millis(10, 10_000)
      .default(DEFAULT_LOG_FOLLOW_FLUSH_MS)
      .describe("Milliseconds a follower's new lines are gathered before they are sent as one event."),
  },
  resolve: (v): LogsConfig => ({
    archiveBytes: v.FAIRWAY_LOG_ARCHIVE_KIB * 1024,
    retentionDays: v.FAIRWAY_LOG_RETENTION_DAYS,
    followBufferLines: v.FAIRWAY_LOG_FOLLOW_BUFFER_LINES,
    followFlushMs: v.FAIRWAY_LOG_FOLLOW_FLUSH_MS,
  }),
});
