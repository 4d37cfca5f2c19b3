// The simulated cluster's job logs: computed from the run (core/logs/simulated-log.ts), so every
// replica answers the same without any state of its own. A run's pods exist while it runs; when it
// ends the backend hands each pod's output to the archive ('pod-log' events), as a cluster whose
// pods are deleted would leave it only there.
import { keepLast, type SimulatedLogRun, simulatedLogLines } from '../../core/logs/index.js';
import type {
  BackendClusterEvent,
  BackendEvent,
  BackendJob,
  BackendLogLine,
  BackendLogPod,
  BackendLogRun,
  BackendLogSink,
  BackendLogs,
} from '../port.js';
import type { Timers } from './timers.js';

const commandOf = (workload: Record<string, unknown> | undefined): string[] => {
  const c = workload?.container as { command?: string[]; args?: string[] } | undefined;
  return [...(c?.command ?? []), ...(c?.args ?? [])];
};

/** What a pod's archive keeps by default: its last MiB. */
export const DEFAULT_LOG_ARCHIVE_BYTES = 1024 * 1024;

const podsOf = (run: { podSets: readonly { name: string; count: number }[] }): BackendLogPod[] =>
  run.podSets.flatMap((ps) => Array.from({ length: ps.count }, (_, index) => ({ podSet: ps.name, index })));

/** How many stopped runs' ends the reader remembers (oldest forgotten first). */
const REMEMBERED_ENDS = 10_000;

export class SimulatedLogs implements BackendLogs {
  /** When this cluster stopped a run, by job and admission: a pod writes nothing after it stopped. */
  private readonly ends = new Map<string, number>();

  constructor(
    private readonly timeScale: number,
    private readonly now: () => number,
    private readonly timers: () => Timers,
  ) {}

  /** The backend stopped the run (its end reaches the readers as an event, later). */
  runEnded(jobId: string, admissionAt: number, at: number): void {
    this.ends.set(`${jobId}@${admissionAt}`, at);
    if (this.ends.size > REMEMBERED_ENDS) this.ends.delete(this.ends.keys().next().value!);
  }

  /** The reader's clock for a run: now, or the run's end once this cluster stopped it. */
  private upto(run: BackendLogRun): number {
    return Math.min(this.now(), this.ends.get(`${run.jobId}@${run.admissionAt}`) ?? Number.POSITIVE_INFINITY);
  }

  async pods(run: BackendLogRun): Promise<BackendLogPod[]> {
    return run.outcome === 'running' ? podsOf(run) : [];
  }

  async read(
    run: BackendLogRun,
    pod: BackendLogPod,
    options: { after?: string | null; tailLines?: number },
  ): Promise<BackendLogLine[] | null> {
    if (run.outcome !== 'running') return null;
    return simulatedLogLines(run, pod, this.timeScale, this.upto(run), {
      after: options.after ?? null,
      tail: options.tailLines ?? null,
    });
  }

  follow(run: BackendLogRun, pod: BackendLogPod, after: string | null, sink: BackendLogSink): () => void {
    let cursor = after;
    let stopped = false;
    const timers = this.timers();
    // A declared step is stepMs/timeScale of the clock: look about that often, within 50 ms – 1 s.
    const every = Math.min(1000, Math.max(50, Math.round(30_000 / this.timeScale)));
    const tick = () => {
      if (stopped) return;
      if (run.outcome !== 'running') {
        stop();
        sink.end();
        return;
      }
      const lines = simulatedLogLines(run, pod, this.timeScale, this.upto(run), { after: cursor });
      if (lines.length) {
        cursor = lines.at(-1)!.cursor;
        sink.lines(lines);
      }
    };
    const interval = timers.setInterval(tick, every);
    (interval as { unref?: () => void }).unref?.();
    const stop = () => {
      stopped = true;
      timers.clearInterval(interval);
    };
    queueMicrotask(tick);
    return stop;
  }

  async events(run: BackendLogRun): Promise<BackendClusterEvent[]> {
    const out: BackendClusterEvent[] = [];
    for (const pod of podsOf(run)) {
      const object = `Pod ${pod.index} of ${pod.podSet}`;
      const event = (type: 'Normal' | 'Warning', reason: string, message: string, at: number) =>
        out.push({ type, reason, message, count: 1, firstSeen: at, lastSeen: at, object, pod });
      event(
        'Normal',
        'Scheduled',
        `Successfully assigned ${pod.podSet}-${pod.index} to a simulated node`,
        run.startedAt,
      );
      event('Normal', 'Started', 'Started container main', run.startedAt);
      if (run.endedAt !== null && (run.outcome === 'preempted' || run.outcome === 'cancelled'))
        event('Normal', 'Killing', 'Stopping container main', run.endedAt);
      if (run.endedAt !== null && run.outcome === 'disrupted')
        event('Warning', 'Evicted', run.reason ?? 'The pod was evicted', run.endedAt);
    }
    return out.sort((a, b) => a.firstSeen - b.firstSeen);
  }
}

/** The run a simulated job's backend record describes (for its archive at the end). */
export function simulatedRunOf(
  job: BackendJob,
  startedAt: number,
  endedAt: number,
  outcome: Exclude<BackendLogRun['outcome'], 'running'>,
  reason: string | null,
): SimulatedLogRun {
  return {
    jobId: job.jobId,
    name: job.name,
    run: 0,
    admissionAt: job.admission.at,
    startedAt,
    endedAt,
    outcome,
    reason,
    podSets: job.podSets.map((p) => ({ name: p.name, count: p.count, gpusPerPod: p.perPod.gpu ?? 0 })),
    expectedDurationMs: job.expectedDurationMs ?? null,
    checkpointIntervalMs: job.checkpoint?.intervalMs ?? null,
    workloadType: job.workloadType ?? null,
    command: commandOf(job.workload),
  };
}

/** One 'pod-log' event per pod of the ended run, each with its last `maxBytes` of output. */
export function podLogEvents(
  run: SimulatedLogRun,
  timeScale: number,
  at: number,
  maxBytes: number,
): BackendEvent[] {
  return podsOf(run).map((pod) => {
    const { lines, truncated } = keepLast(simulatedLogLines(run, pod, timeScale, at), maxBytes);
    return { type: 'pod-log', jobId: run.jobId, at, admissionAt: run.admissionAt, pod, lines, truncated };
  });
}
