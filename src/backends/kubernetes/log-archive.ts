// The output of the runs this backend runs (the leader's), captured as each pod ends: when its
// container exits, or as it starts stopping (preemption, eviction, a drain: its log goes with the pod),
// the log is followed to its end (or read, when it ended already) and reported once as a 'pod-log'
// event with its last `archiveBytes` of lines. Bounded: a few captures at once (pods being stopped
// first, since their logs are about to go), each holding at most the archive size.
import type { V1Pod } from '@kubernetes/client-node';
import type { BackendEvent, BackendJob } from '../port.js';
import { LineRing, portable } from './log-lines.js';
import { followPodLog, type PodLogDeps } from './pod-log-reads.js';
import { mainContainer, podEnding, podOver, type RunPod, type RunScope, runPods } from './run-pods.js';

/** A run as the backend tracks it: run-tracking.ts's TrackedRun and custom-runs.ts's runs both fit. */
export interface ArchivedRun {
  job: BackendJob;
  admissionAt: string;
}

export interface LogArchiveDeps {
  reads: PodLogDeps;
  /** The run this backend runs for the job now, if any (the leader's). */
  run(jobId: string): ArchivedRun | undefined;
  pods(jobId: string): Iterable<V1Pod> | undefined;
  namespaceOf(tenantId: string): string | undefined;
  emit(event: BackendEvent): void;
  now(): number;
  log(message: string): void;
  archiveBytes: number;
  concurrency: number;
}

interface Capture {
  jobId: string;
  admissionAt: string;
  found: RunPod;
}

/** Captures waiting beyond this are dropped (said once each): a bound on a burst of ends. */
const MAX_WAITING = 1000;

export class LogArchive {
  /** Runs with pods whose ends are watched: kept past the run's own tracking (a suspension ends it
   * before its pods stop), until the run's pods are gone. */
  private readonly runs = new Map<string, RunScope & { done: Set<string> }>();
  private readonly urgent: Capture[] = [];
  private readonly later: Capture[] = [];
  private readonly stops = new Set<() => void>();
  private active = 0;
  private closed = false;

  constructor(private readonly deps: LogArchiveDeps) {}

  /** A pod or Job of the job changed: captures the pods of its run that end now. */
  changed(jobId: string): void {
    if (this.closed || this.deps.concurrency <= 0) return;
    const current = this.deps.run(jobId);
    let scope = this.runs.get(jobId);
    if (current && scope?.admissionAt !== current.admissionAt) {
      const namespace = this.deps.namespaceOf(current.job.tenant);
      if (!namespace) return;
      const podSets = current.job.admission.podSets.map((p) => ({ name: p.name, count: p.count }));
      scope = { namespace, admissionAt: current.admissionAt, podSets, done: new Set() };
      this.runs.set(jobId, scope);
    }
    if (!scope) return;
    const pods = runPods(this.deps.pods(jobId) ?? [], scope);
    if (pods.length === 0 && !current) {
      this.runs.delete(jobId);
      return;
    }
    for (const found of pods) {
      const uid = found.pod.metadata?.uid;
      if (!uid || scope.done.has(uid) || !podEnding(found.pod)) continue;
      scope.done.add(uid);
      const capture = { jobId, admissionAt: scope.admissionAt, found };
      const waiting = this.urgent.length + this.later.length;
      if (waiting >= MAX_WAITING) {
        this.deps.log(
          `not archiving the output of pod ${found.pod.metadata?.name}: ${waiting} pods wait already`,
        );
        continue;
      }
      // A pod being stopped loses its log with it; one that ended keeps it until it is removed.
      (found.pod.metadata?.deletionTimestamp && !podOver(found.pod) ? this.urgent : this.later).push(capture);
    }
    this.pump();
  }

  close(): void {
    this.closed = true;
    this.urgent.length = 0;
    this.later.length = 0;
    for (const stop of [...this.stops]) stop();
    this.stops.clear();
  }

  private pump(): void {
    while (!this.closed && this.active < this.deps.concurrency) {
      const next = this.urgent.shift() ?? this.later.shift();
      if (!next) return;
      this.capture(next);
    }
  }

  private capture({ jobId, admissionAt, found }: Capture): void {
    const { pod, position } = found;
    const meta = pod.metadata!;
    const container = mainContainer(pod);
    if (!container) return;
    this.active++;
    const ring = new LineRing({ bytes: this.deps.archiveBytes });
    const target = { namespace: meta.namespace!, pod: meta.name!, container, uid: meta.uid! };
    const stop = followPodLog(
      this.deps.reads,
      target,
      { after: null, tailBytes: this.deps.archiveBytes, over: podOver(pod) },
      {
        lines: (lines) => {
          for (const line of lines) ring.push(line);
        },
        end: ({ read, truncated }) => {
          this.stops.delete(stop);
          this.active--;
          if (this.closed) return;
          if (read)
            this.deps.emit({
              type: 'pod-log',
              jobId,
              at: this.deps.now(),
              admissionAt: Number(admissionAt),
              pod: position,
              lines: ring.lines().map(portable),
              truncated: truncated || ring.dropped,
            });
          else
            this.deps.log(`the output of pod ${meta.namespace}/${meta.name} was gone before it was archived`);
          this.pump();
        },
      },
    );
    this.stops.add(stop);
  }
}
