import type { WorkloadType } from '../../core/governance/index.js';
import type { CheckpointSpec, PodSetSpec } from '../../core/scheduling/index.js';

/** A job as submitted (submitJob, submitJobs, previewJob): what to run, where, and how it saves progress. */
export interface SubmitJobInput {
  /** The queue; when omitted, the project's default queue. */
  queueId?: string | null;
  projectId?: string | null;
  name: string;
  priorityClass: string;
  podSets: PodSetSpec[];
  expectedDurationMs?: number | null;
  maxRunMs?: number | null;
  /** How the job saves progress (declared ms); absent: a preemption loses everything since admission. */
  checkpoint?: CheckpointSpec | null;
  idempotencyKey?: string | null;
  workload?: Record<string, unknown> | null;
  /** Probe signals: what the job is (null: undeclared) and whether it serves latency-sensitive traffic
   * (default false).
   */
  workloadType?: WorkloadType | null;
  latencySensitive?: boolean | null;
  /** Retries in place of the job's own failures before it fails (0–10; default 0). Disruptions never count. */
  maxRetries?: number | null;
  /** Which workload controller runs it (Kubernetes); default BATCH. */
  workloadKind?: 'BATCH' | 'JOBSET' | 'PYTORCH_JOB' | 'RAY_JOB' | 'RAY_CLUSTER' | null;
}
