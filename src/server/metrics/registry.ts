import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Admission, Preemption, QueueStatus } from '../../core/scheduling/index.js';
import { lostGpuHoursOf, type SchedulerStats } from '../../services/scheduling/index.js';

/** Operation names longer than this are recorded as OTHER_OPERATION (label cardinality). */
export const MAX_OPERATION_NAME_LENGTH = 64;
/** Distinct operation names kept as labels; later new ones are recorded as OTHER_OPERATION. */
export const MAX_OPERATION_NAMES = 200;
export const OTHER_OPERATION = 'other';
export const ANONYMOUS_OPERATION = 'anonymous';

type OperationLabels = 'operation_type' | 'operation_name';

/**
 * Fairway's Prometheus metrics: one registry per app, never prom-client's global one, so
 * several apps in one process (the tests) each count their own and never clash on names.
 */
export interface FairwayMetrics {
  registry: Registry;
  operationDuration: Histogram<OperationLabels>;
  operationErrors: Counter<OperationLabels | 'code'>;
  subscriptionsOpen: Gauge;
  /** The label for an operation name: 'anonymous', itself, or 'other' past the bounds. */
  operationLabel(name: string | null | undefined): string;
  /** The scheduler's observer: one leader cycle took `seconds` and decided this. */
  observeCycle(seconds: number, admitted: readonly Admission[], preempted: readonly Preemption[]): void;
  /** Gauges read at scrape time from the scheduler's figures (call once the scheduler exists). */
  watchScheduler(sources: { stats: SchedulerStats; logError?: (error: unknown) => void }): void;
  /** Gauges of the backend's GPU probe source (call once, when the backend has one). */
  watchProbes(health: () => { outage: boolean; outages: number }): void;
}

export interface MetricsOptions {
  /**
   * The backend's declared time / real time: the core's lost GPU-milliseconds are in the backend's
   * clock, GPU-hours lost are counted in declared time, as the ledger does. Default 1.
   */
  timeScale?: number;
}

export function createMetrics(options: MetricsOptions = {}): FairwayMetrics {
  const timeScale = options.timeScale ?? 1;
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry });

  const operationDuration = new Histogram({
    name: 'fairway_graphql_operation_duration_seconds',
    help: 'Execution time of GraphQL queries and mutations, per operation.',
    labelNames: ['operation_type', 'operation_name'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const operationErrors = new Counter({
    name: 'fairway_graphql_errors_total',
    help: 'GraphQL errors returned to callers, per operation and error code.',
    labelNames: ['operation_type', 'operation_name', 'code'] as const,
    registers,
  });
  const subscriptionsOpen = new Gauge({
    name: 'fairway_subscriptions_open',
    help: 'GraphQL subscriptions currently open (WebSocket and SSE).',
    registers,
  });
  const cycleDuration = new Histogram({
    name: 'fairway_scheduler_cycle_duration_seconds',
    help: "Leader admission cycle slices (FAIRWAY_CYCLE_SLICE_MS; one observation per slice, a whole cycle when slicing is off): the core's decisions and their write.",
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers,
  });
  const admittedTotal = new Counter({
    name: 'fairway_scheduler_admitted_total',
    help: 'Jobs admitted by this replica while leading, per queue.',
    labelNames: ['queue'] as const,
    registers,
  });
  const preemptedTotal = new Counter({
    name: 'fairway_scheduler_preempted_total',
    help: 'Jobs preempted by this replica while leading, per victim queue.',
    labelNames: ['queue'] as const,
    registers,
  });
  const lostGpuHoursTotal = new Counter({
    name: 'fairway_scheduler_preemption_lost_gpu_hours_total',
    help: "GPU-hours of work thrown away by preemptions decided by this replica while leading (each victim's GPUs × time since its last checkpoint, or since admission), per victim queue and reason.",
    labelNames: ['queue', 'reason'] as const,
    registers,
  });

  const seen = new Set<string>();
  const operationLabel = (name: string | null | undefined): string => {
    if (!name) return ANONYMOUS_OPERATION;
    if (name.length > MAX_OPERATION_NAME_LENGTH) return OTHER_OPERATION;
    if (seen.has(name)) return name;
    if (seen.size >= MAX_OPERATION_NAMES) return OTHER_OPERATION;
    seen.add(name);
    return name;
  };

  return {
    registry,
    operationDuration,
    operationErrors,
    subscriptionsOpen,
    operationLabel,
    observeCycle(seconds, admitted, preempted) {
      cycleDuration.observe(seconds);
      for (const admission of admitted) admittedTotal.inc({ queue: admission.queue });
      for (const preemption of preempted) {
        preemptedTotal.inc({ queue: preemption.victimQueue });
        // Counted even at 0 (a resumable victim), so the series exists beside the preemption count.
        const lost = lostGpuHoursOf(preemption.lostGpuMs, timeScale);
        if (lost !== null && lost >= 0)
          lostGpuHoursTotal.inc({ queue: preemption.victimQueue, reason: preemption.reason }, lost);
      }
    },
    watchProbes(health) {
      new Gauge({
        name: 'fairway_gpu_probe_outage',
        help: '1 while the GPU probe source (Prometheus) fails or answers no series for any running GPU job, else 0 (followers: 0, only the leader polls).',
        registers,
        collect() {
          this.set(health().outage ? 1 : 0);
        },
      });
      new Gauge({
        name: 'fairway_gpu_probe_outages',
        help: 'Outages of the GPU probe source begun since this replica started.',
        registers,
        collect() {
          this.set(health().outages);
        },
      });
    },
    watchScheduler({ stats, logError }) {
      // Read at scrape time (prom-client awaits collect): a scrape sees the current state, and
      // nothing is kept in step between scrapes. A failing database leaves these empty, and
      // the rest of the scrape still answers.
      // The three per-queue gauges are collected concurrently (prom-client reads every metric
      // of a scrape in parallel): they share one read of the queues while it is in flight.
      let inFlight: Promise<QueueStatus[]> | null = null;
      const statuses = (): Promise<QueueStatus[]> =>
        (inFlight ??= stats
          .queueStatuses()
          .catch((error: unknown) => {
            logError?.(error);
            return [];
          })
          .finally(() => (inFlight = null)));
      const perQueue = (name: string, help: string, value: (status: QueueStatus) => number) =>
        new Gauge({
          name,
          help,
          labelNames: ['queue'] as const,
          registers,
          async collect() {
            const all = await statuses();
            this.reset();
            for (const status of all) this.set({ queue: status.name }, value(status));
          },
        });
      perQueue('fairway_queue_pending_jobs', 'Pending jobs per queue.', (s) => s.pendingCount);
      perQueue('fairway_queue_admitted_jobs', 'Admitted jobs per queue.', (s) => s.admittedCount);
      perQueue(
        'fairway_queue_weighted_share',
        'Weighted dominant resource share per queue (0 when not borrowing; +Inf when borrowing with weight 0).',
        (s) => s.weightedShare,
      );
      new Gauge({
        name: 'fairway_scheduler_leader',
        help: '1 when this replica leads the scheduler, else 0.',
        registers,
        collect() {
          this.set(stats.isLeader() ? 1 : 0);
        },
      });
      new Gauge({
        name: 'fairway_outbox_oldest_unperformed_age_seconds',
        help: 'Age of the oldest outbox row not yet performed (0 when none): how far side effects lag behind decisions.',
        registers,
        async collect() {
          try {
            const oldest = await stats.oldestUnperformedOutboxAt();
            this.set(oldest ? Math.max(0, (Date.now() - oldest.getTime()) / 1000) : 0);
          } catch (error) {
            this.reset();
            logError?.(error);
          }
        },
      });
      new Gauge({
        name: 'fairway_outbox_unperformed',
        help: 'Outbox rows not yet performed (side effects waiting; growth means the dispatcher lags).',
        registers,
        async collect() {
          try {
            this.set(await stats.unperformedOutbox());
          } catch (error) {
            this.reset();
            logError?.(error);
          }
        },
      });
    },
  };
}
