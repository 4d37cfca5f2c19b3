// The shapes of a replay's metrics (computeReplayMetrics, metrics.ts): what the JSON report holds.
import type { EtaStats } from './eta.js';
import type { GovernanceMetrics } from './governance/metrics.js';

export interface WaitStats {
  /** Jobs counted (started, plus never-started ones with a censored wait). */
  count: number;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  mean: number | null;
}

export interface SlaStats {
  eligible: number;
  met: number;
  /** met / eligible, null when no job was eligible. */
  attainment: number | null;
}

export interface PreemptionStats {
  count: number;
  gpuHoursLost: number;
  byReason: Record<string, { count: number; gpuHoursLost: number }>;
}

export interface TenantMetrics {
  tenant: string;
  nominalGpus: number;
  weight: number;
  jobs: number;
  started: number;
  unstarted: number;
  rejected: number;
  waitSeconds: WaitStats;
  sla: SlaStats;
  /** GPU-hours allocated to the tenant inside the window. */
  gpuHoursReceived: number;
  /** GPU-hours the tenant was entitled to inside the window (see docs/simulator.md). */
  gpuHoursEntitled: number;
  /** received / entitled; null when entitled is 0. */
  fairnessRatio: number | null;
  /** Mean share of the cluster the tenant held inside the window. */
  allocationShare: number;
  preemptionsSuffered: PreemptionStats;
}

export interface Timeline {
  startMs: number;
  bucketMs: number;
  tenants: string[];
  /** allocation[t][b]: mean GPUs held by tenant t in bucket b. */
  allocation: number[][];
  /** preemptions[b]: count per reason in bucket b. */
  preemptions: Record<string, number>[];
}

export const WAIT_BUCKETS: { label: string; upToS: number }[] = [
  { label: '0s', upToS: 0 },
  { label: '≤1m', upToS: 60 },
  { label: '≤10m', upToS: 600 },
  { label: '≤1h', upToS: 3600 },
  { label: '≤6h', upToS: 6 * 3600 },
  { label: '≤1d', upToS: 86400 },
  { label: '≤1w', upToS: 7 * 86400 },
  { label: '>1w', upToS: Number.POSITIVE_INFINITY },
];

export interface ReplayMetrics {
  policy: string;
  placement: string;
  capacityGpus: number;
  window: { startMs: number; endMs: number; hours: number };
  jobs: number;
  started: number;
  unstarted: number;
  rejected: number;
  allocationRatio: number;
  /** Like allocationRatio, counting only runs that completed (GPU-time later lost to preemption left out). */
  usefulAllocationRatio: number;
  waitSeconds: WaitStats;
  /** Wait-time histogram over WAIT_BUCKETS (counts). */
  waitHistogram: number[];
  sla: SlaStats;
  jainIndex: number | null;
  preemptions: PreemptionStats;
  fragmentationRatio: number;
  previewAtSubmit: Record<string, number>;
  /** Error of the ETA shown at submit against the actual start (see eta.ts). */
  etaAtSubmit: EtaStats;
  tenants: TenantMetrics[];
  timeline: Timeline;
  /** Probes, idle reclaim and controller (runs made with governance only; absent otherwise). */
  governance?: GovernanceMetrics;
}
