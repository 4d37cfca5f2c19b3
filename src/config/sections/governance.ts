import { z } from 'zod';
import { millis, section } from '../section.js';

/** How often the leader activates approved quota requests and expires temporary ones. */
export const DEFAULT_QUOTA_REQUEST_INTERVAL_MS = 30_000;
/** How often the leader checks governed queues' admitted jobs for idle and held reclaim. */
export const DEFAULT_IDLE_CHECK_INTERVAL_MS = 60_000;
/** The second-level controller's default window. */
export const DEFAULT_CONTROLLER_WINDOW_MS = 300_000;
/** At most one stored probe sample per running job this often. */
export const DEFAULT_PROBE_INTERVAL_MS = 60_000;
/** Probe samples older than this are deleted. */
export const DEFAULT_PROBE_RETENTION_HOURS = 168;
/** How often the Kubernetes backend's Prometheus is polled. */
export const DEFAULT_PROBES_PROMETHEUS_INTERVAL_MS = 30_000;

export interface ProbesConfig {
  intervalMs: number;
  retentionHours: number;
  /** How often a backend's metrics source (Kubernetes: Prometheus) is polled. */
  pollMs: number;
  /** A Prometheus that scrapes NVIDIA's DCGM exporter (over the Kubernetes settings file's
   * probes.prometheusUrl).
   */
  prometheusUrl?: string;
}

export interface GovernanceConfig {
  quotaRequestIntervalMs: number;
  /** 0: idle and held reclaim off. */
  idleCheckIntervalMs: number;
  /** The controller's default window; platform admins may set another. */
  controllerWindowMs: number;
  /** Runtime probes: stored sample interval, retention, and the Kubernetes backend's Prometheus source. */
  probes: ProbesConfig;
}

export const governanceSection = section({
  key: 'governance',
  title: 'Governance: quota requests, reclaim, the controller, runtime probes',
  description: 'Loops the scheduling leader runs besides admission, each on its own period.',
  variables: {
    FAIRWAY_QUOTA_REQUEST_INTERVAL_MS: millis(100, 3_600_000)
      .default(DEFAULT_QUOTA_REQUEST_INTERVAL_MS)
      .describe(
        "Milliseconds between the leader's passes that start approved quota requests whose `startsAt` came and undo those whose `expiresAt` passed.",
      ),
    FAIRWAY_IDLE_CHECK_INTERVAL_MS: z.coerce
      .number()
      .int()
      .min(0)
      .max(3_600_000, 'must be at most an hour')
      .refine((v) => v === 0 || v >= 1000, 'must be 0 (off) or at least 1000')
      .default(DEFAULT_IDLE_CHECK_INTERVAL_MS)
      .describe(
        "Milliseconds between the leader's checks of governed queues' admitted jobs for idle and held reclaim; `0`: off.",
      )
      .meta({ typeText: 'integer, `0` or 1000–3600000' }),
    FAIRWAY_CONTROLLER_WINDOW_MS: millis(1000, 86_400_000)
      .default(DEFAULT_CONTROLLER_WINDOW_MS)
      .describe(
        "The second-level controller's window in milliseconds (the default; `setGovernanceController(windowSeconds:)` overrides it).",
      ),
    FAIRWAY_PROBE_INTERVAL_MS: millis(1000, 3_600_000)
      .default(DEFAULT_PROBE_INTERVAL_MS)
      .describe(
        "Runtime probes: at most one stored sample per running job this often, in milliseconds (the backend's reports in between are averaged into it).",
      ),
    FAIRWAY_PROBE_RETENTION_HOURS: z.coerce
      .number()
      .positive('must be a positive number of hours')
      .max(24 * 366, 'must be at most a year')
      .default(DEFAULT_PROBE_RETENTION_HOURS)
      .describe('Hours: probe samples older than this are deleted by the leader in bounded batches.'),
    FAIRWAY_PROBES_PROMETHEUS_URL: z
      .url({ protocol: /^https?$/, error: 'must be an http(s) URL of a Prometheus server' })
      .optional()
      .describe(
        "Kubernetes backend: a Prometheus that scrapes NVIDIA's DCGM exporter; the leader polls it for running pods' GPU utilization and memory (queries and labels: the `probes:` block of the Kubernetes settings). Over the settings file's `probes.prometheusUrl`.",
      )
      .meta({ typeText: 'http(s) URL' }),
    FAIRWAY_PROBES_PROMETHEUS_INTERVAL_MS: millis(1000, 3_600_000)
      .default(DEFAULT_PROBES_PROMETHEUS_INTERVAL_MS)
      .describe('Milliseconds between polls of that Prometheus.'),
  },
  resolve: (v): GovernanceConfig => ({
    quotaRequestIntervalMs: v.FAIRWAY_QUOTA_REQUEST_INTERVAL_MS,
    idleCheckIntervalMs: v.FAIRWAY_IDLE_CHECK_INTERVAL_MS,
    controllerWindowMs: v.FAIRWAY_CONTROLLER_WINDOW_MS,
    probes: {
      intervalMs: v.FAIRWAY_PROBE_INTERVAL_MS,
      retentionHours: v.FAIRWAY_PROBE_RETENTION_HOURS,
      pollMs: v.FAIRWAY_PROBES_PROMETHEUS_INTERVAL_MS,
      prometheusUrl: v.FAIRWAY_PROBES_PROMETHEUS_URL,
    },
  }),
});
