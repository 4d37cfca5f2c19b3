// The execution-backend port: what a backend (simulated, Kubernetes) implements for the
// scheduling service. Types only; it lives beside its adapters, and the core knows nothing of it.

import type { WorkloadType } from '../core/governance/index.js';
import type { LatencyModel, TrafficModel } from '../core/inference/index.js';
import type { Admission, CheckpointSpec, NodeSpec, PodSetSpec } from '../core/scheduling/index.js';

/** Which controller runs a job on Kubernetes: batch/v1 Jobs, a JobSet, a PyTorchJob, a RayJob or an open-ended RayCluster. */
export type WorkloadKind = 'BATCH' | 'JOBSET' | 'PYTORCH_JOB' | 'RAY_JOB' | 'RAY_CLUSTER';
export type CustomWorkloadKindName = Exclude<WorkloadKind, 'BATCH'>;

/** What a submit tells a backend about the workload, to be refused early when it cannot run it. */
export interface WorkloadRequest {
  workloadKind: WorkloadKind;
  podSets: { name: string; count: number; perPod: { gpu?: number } }[];
  /** The submitted container's command and args; null when the job names no container. */
  container: { command?: string[]; args?: string[] } | null;
  /** A replica of an inference service (a Deployment's pod, or a LeaderWorkerSet's group when it spans hosts). */
  service?: boolean;
}

/** What an execution backend needs to run one admitted job. */
export interface BackendJob {
  jobId: string;
  tenant: string;
  queue: string;
  name: string;
  podSets: PodSetSpec[];
  admission: Admission;
  /** Declared run time; the simulated backend runs each job this long (scaled). */
  expectedDurationMs?: number;
  /** Hard limit: the backend fails the job when it runs longer. */
  maxRunMs?: number;
  /**
   * The job's declared checkpointing (declared ms). A backend that can resume a suspended run
   * (the simulated one) keeps its progress at the last checkpoint (all of it when resumable), so
   * the next `start` runs only what remains; others pass it to the workload.
   */
  checkpoint?: CheckpointSpec;
  /** What the job declared it is (null/absent: undeclared); the simulated cluster models its utilization by
   * it, Kubernetes annotates its pods.
   */
  workloadType?: WorkloadType | null;
  /** Declared as serving latency-sensitive traffic. */
  latencySensitive?: boolean;
  /** The workload controller that runs it (Kubernetes; absent: BATCH). */
  workloadKind?: WorkloadKind;
  /**
   * How often the job's own failures (a non-zero exit, OOMKilled) are retried in place before the
   * job fails (0–10; absent: 0). Disruptions (eviction, drain, a lost node) are not failures: the
   * backend reports them as 'disrupted' and the job is requeued, whatever this says.
   */
  maxRetries?: number;
  /**
   * Seconds the job's pods get between the stop signal and being killed when it is preempted or
   * reclaimed: its queue's isolation policy's reclaim grace. Absent: the backend's default.
   */
  graceSeconds?: number;
  /** Opaque to the scheduler: image, command, env… (the simulated backend reads `simulate`). */
  workload?: Record<string, unknown>;
}

export type BackendEvent =
  | { type: 'started'; jobId: string; at: number }
  | { type: 'succeeded'; jobId: string; at: number }
  | { type: 'failed'; jobId: string; at: number; reason: string }
  /**
   * The run was stopped by the cluster, not by the job (a pod evicted, its node drained or lost,
   * the cluster's own preemption, a pod deleted from outside): the job goes back to pending with
   * its checkpoint. `at` is when the run stopped holding its place; `reason` is tenant-safe.
   * The backend has already stopped the run's other pods.
   */
  | { type: 'disrupted'; jobId: string; at: number; reason: string }
  /**
   * A suspended (preempted) run's pods are all gone, at `at`: its GPUs are free only now
   * (reported by backends with a `stopGraceSeconds`, whose pods stop over a grace period).
   */
  | { type: 'stopped'; jobId: string; at: number }
  /** GPU utilization of a running job, 0..1 averaged over its GPUs; GPU memory in use over GPU memory (0..1)
   * when the source says.
   */
  | { type: 'utilization'; jobId: string; at: number; gpuUtilization: number; memoryUtilization?: number }
  /**
   * Admitted, but its pods are not all running after the backend's limit (unschedulable,
   * image still pulling…): reported once per admission so the job can be reclaimed.
   */
  | { type: 'not-running'; jobId: string; at: number; message: string }
  /**
   * A pod's output as it ended (its container exited, or it was stopped): the last lines the
   * backend kept of it (at most the archive size it was given), to be archived for reads after the
   * pod is gone. `admissionAt` names the run. May come more than once for one pod (a replay): the
   * archive keeps one copy.
   */
  | {
      type: 'pod-log';
      jobId: string;
      at: number;
      admissionAt: number;
      pod: BackendLogPod;
      lines: BackendLogLine[];
      /** Whether earlier lines were left out (over the archive size). */
      truncated: boolean;
    };

/**
 * A node as a backend that discovers its nodes (Kubernetes) reports it: the core's node, with
 * `unschedulable` always said (cordoned, not ready, or tainted against Fairway's pods) and
 * `dedicatedTenant` null when the node is not tainted for one tenant.
 */
export type BackendNode = Omit<NodeSpec, 'unschedulable' | 'dedicatedTenant'> & {
  unschedulable: boolean;
  dedicatedTenant: string | null;
};

/** A flavor as the backend counts it: whole GPUs, or MIG slices / time-slice shares per GPU. */
export interface BackendFlavor {
  name: string;
  kind: 'gpu' | 'mig' | 'timeslice';
  slicesPerGpu?: number;
}

/** A tenant as a backend that isolates tenants (namespaces, quotas, network policy) needs it. */
export interface BackendTenant {
  id: string;
  slug: string;
  isolationLevel: 'DEDICATED' | 'GUARANTEED' | 'ELASTIC' | 'BEST_EFFORT';
  /** Egress CIDRs; null = unrestricted. */
  egressAllowlist: string[] | null;
  /**
   * Flavor name → the most the tenant's queues could ever hold of it (defence in depth behind
   * the scheduler), in the flavor's quota units: whole GPUs, or slices / shares for MIG and
   * time-sliced flavors.
   */
  maxGpus: Record<string, number>;
}

/**
 * One run of a job as the log readers know it (from the database: any replica can ask): the run
 * number (1 for the first start, +1 per readmission), its admission time (Kubernetes: the pods of
 * that admission), when it started and, once over, when it ended and how.
 */
export interface BackendLogRun {
  jobId: string;
  /** The tenant's id. */
  tenant: string;
  name: string;
  run: number;
  admissionAt: number;
  startedAt: number;
  /** Null while the run goes on. */
  endedAt: number | null;
  outcome: 'running' | 'succeeded' | 'failed' | 'preempted' | 'disrupted' | 'cancelled';
  /** The failure or stop reason, tenant-safe (null when none). */
  reason: string | null;
  podSets: { name: string; count: number; gpusPerPod: number }[];
  expectedDurationMs: number | null;
  checkpointIntervalMs: number | null;
  workloadType: WorkloadType | null;
  /** The container's command and args as submitted (absent or empty when it names none). */
  command?: string[];
}

/** One pod of a run: its pod set's name and its index within it (0-based). */
export interface BackendLogPod {
  podSet: string;
  index: number;
}

/**
 * One line of a pod's output as the cluster holds it: when it was written (ms), which stream
 * (null when the cluster does not tell them apart), its text without the newline (already decoded;
 * not yet cut or masked), and a cursor: an opaque string that orders the pod's lines (a follow or
 * read `after` a cursor returns only later lines, none twice).
 */
export interface BackendLogLine {
  at: number;
  stream: 'stdout' | 'stderr' | null;
  text: string;
  cursor: string;
}

/** Something the cluster said about a run's pods or objects (Kubernetes Events). */
export interface BackendClusterEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  /** As the cluster wrote it: the caller removes other tenants' names before showing it. */
  message: string;
  count: number;
  firstSeen: number;
  lastSeen: number;
  /** What it is about: 'Pod 3 of workers', 'Job', 'JobSet'… */
  object: string;
  /** The pod it is about, when it is about one. */
  pod: BackendLogPod | null;
}

/** Receives a followed pod's lines as they are written; `end` once the pod's output is over. */
export interface BackendLogSink {
  lines(lines: BackendLogLine[]): void;
  end(): void;
}

/**
 * A backend's job logs. Reads may come from any replica and are never fenced: they change nothing.
 * Every call is given the run as the database knows it, so a backend without state of its own
 * (the simulated cluster computes its seeded logs from it) answers the same on every replica.
 */
export interface BackendLogs {
  /** The pods of the run whose output the cluster still holds. */
  pods(run: BackendLogRun): Promise<BackendLogPod[]>;
  /**
   * The pod's lines the cluster still holds, oldest first: only those after the cursor `after`,
   * at most the last `tailLines`. Null when the cluster holds nothing of this pod any more.
   */
  read(
    run: BackendLogRun,
    pod: BackendLogPod,
    options: { after?: string | null; tailLines?: number },
  ): Promise<BackendLogLine[] | null>;
  /**
   * Follows the pod's output after the cursor `after` (null: from the start): lines as they are
   * written, `end` when the pod's output is over (its container ended, or the pod is gone). A
   * dropped connection is resumed by the backend without a line twice or one lost (within what the
   * cluster still holds). Returns the function that stops it.
   */
  follow(run: BackendLogRun, pod: BackendLogPod, after: string | null, sink: BackendLogSink): () => void;
  /** What the cluster said about the run's pods and objects, oldest first. */
  events(run: BackendLogRun): Promise<BackendClusterEvent[]>;
}

/**
 * Thrown by a backend call that cannot be done yet and will be retried (the outbox leaves its row
 * for the next dispatch): an expected wait, logged as one line, not as a fault.
 */
export class BackendNotReadyError extends Error {}

/**
 * Where admitted jobs run: the simulated cluster (embedded default) or Kubernetes.
 * Shaped after Kueue's contract with Kubernetes Jobs: created on admission, suspended on
 * preemption (the spec is kept so it can start again), deleted on cancel, watched for status.
 * Every call is idempotent per job id: replaying an outbox after a crash is harmless.
 */
/** What the autoscaler asks of a service's load each interval. */
export interface ServiceLoadQuery {
  serviceId: string;
  tenant: string;
  name: string;
  /** Its replica jobs that have not ended (a backend counts the ones that serve). */
  replicaJobIds: string[];
  /** The instant the reading starts: it covers (sinceMs, at], requests are counted over it. */
  sinceMs: number;
  at: number;
  /** The modelled traffic (the simulated cluster's). */
  model: { traffic: TrafficModel; latency: LatencyModel };
}

/** A service's load over the last interval. */
export interface ServiceLoadReading {
  /** Replicas serving (ready) as the backend sees them. */
  ready: number;
  rps: number;
  /** p95 latency, ms (null: nothing served). */
  p95Ms: number | null;
  inFlight: number;
  /** Mean GPU utilization of the ready replicas, 0..1 (null: none). */
  gpuUtilization: number | null;
  /** Requests received over the interval. */
  requests: number;
}

export interface ExecutionBackend {
  readonly name: string;
  /**
   * Declared time / backend time: a job declared to run `d` ms runs `d / timeScale` ms on this
   * backend's clock (the simulated cluster's FAIRWAY_SIM_TIME_SCALE; 1 for a real cluster). The
   * core's expected ends and ETAs are in the backend's clock, so specs divide durations by it.
   */
  readonly timeScale: number;
  /**
   * Set by a backend whose suspended runs keep their GPUs while their pods stop (Kubernetes: the
   * termination grace): the grace, in seconds, of a job that names none (`BackendJob.graceSeconds`).
   * Such a backend reports 'stopped' when a suspended run's pods are gone; until then the run is
   * charged. Absent: a suspended run stops at once.
   */
  readonly stopGraceSeconds?: number;
  start(job: BackendJob): Promise<void>;
  /** Preempted: stop the pods now; the job may be started again later. */
  suspend(jobId: string, reason: string): Promise<void>;
  /** Cancelled by its owner: stop and forget. */
  cancel(jobId: string): Promise<void>;
  onEvent(listener: (event: BackendEvent) => void): () => void;
  /** Ids of jobs the backend is running now, to reconcile after a restart. */
  running(): Promise<string[]>;
  /**
   * After a restart or a takeover: `live` is every job the database says is admitted or
   * running. The backend starts those it does not run, keeps (adopts) those it does, and
   * removes runs of any other job (orphans: cancelled or finished while no one watched).
   * Nothing runs twice: a live job's existing run is kept, not started again.
   */
  reconcile(live: BackendJob[]): Promise<void>;
  close(): Promise<void>;
  /** Backends that discover their nodes report the whole inventory on every change. */
  onInventory?(listener: (nodes: BackendNode[]) => void): () => void;
  /**
   * Backends that isolate tenants are given every current tenant (a tenant left out is
   * removed) and the flavors, whose kind says how a pod's GPU request is counted.
   */
  syncTenants?(tenants: BackendTenant[], flavors: BackendFlavor[]): Promise<void>;
  /**
   * Backends that read utilization from a metrics source (Kubernetes: Prometheus) instead of
   * sampling it themselves read it once when the leader asks, and report it as 'utilization' events.
   * Never throws: a source that does not answer is said and asked again at the next call.
   */
  pollUtilization?(): Promise<void>;
  /**
   * Backends with a metrics source: whether it is in an outage (it fails, or answers nothing for
   * running GPU jobs, so idle reclaim has nothing to act on) and how many outages began so far.
   */
  probeHealth?(): { outage: boolean; outages: number };
  /**
   * Why this backend cannot run the workload as asked (a kind whose CRD the cluster does not
   * serve, pod sets its controller cannot take), in words for the submitter; null when it can.
   * Absent: every kind runs as plain pods.
   */
  workloadProblem?(request: WorkloadRequest): Promise<string | null>;
  /** Job logs and cluster events (every backend whose jobs write output). */
  readonly logs?: BackendLogs;
  /**
   * An inference service's load now (the simulated cluster: its modelled traffic over the replicas that
   * run). Null: no reading this interval (the autoscaler then keeps the replicas within bounds).
   */
  serviceLoad?(query: ServiceLoadQuery): Promise<ServiceLoadReading | null>;
}
