// The simulated cluster's job output: a plausible, seeded log per pod (start-up, a line per
// training step with loss and throughput, checkpoints, the end or the error), computed from the
// run alone, so every replica writes the same lines for the same run and any range of them can be
// produced without the ones before. Lines fall at the run's declared times, scaled to the clock.

export interface SimulatedLogRun {
  jobId: string;
  name: string;
  run: number;
  admissionAt: number;
  startedAt: number;
  endedAt: number | null;
  outcome: 'running' | 'succeeded' | 'failed' | 'preempted' | 'disrupted' | 'cancelled';
  reason: string | null;
  podSets: readonly { name: string; count: number; gpusPerPod: number }[];
  expectedDurationMs: number | null;
  checkpointIntervalMs: number | null;
  workloadType: string | null;
  /** The container's command and args: the launcher prints them as it starts. */
  command?: readonly string[];
}

export interface SimulatedLogLine {
  at: number;
  stream: 'stdout' | 'stderr';
  text: string;
  cursor: string;
}

/** Declared ms between two steps: about a hundred steps per declared run, between 5 s and 10 min. */
export function stepMsOf(run: Pick<SimulatedLogRun, 'expectedDurationMs'>): number {
  const expected = run.expectedDurationMs;
  if (!expected || expected <= 0) return 30_000;
  return Math.min(600_000, Math.max(5_000, Math.round(expected / 100)));
}

/** Pods other than the first write a line every this many steps (as rank 0 logs for the job). */
const QUIET_EVERY = 10;

const cursorOf = (k: number, sub: number) => `${String(k).padStart(12, '0')}:${sub}`;
const stepOfCursor = (cursor: string) => Number(cursor.slice(0, 12));

/** FNV-1a over the text, then k mixed in (murmur3's finalizer): a number in [0, 1). */
function noise(seed: string, k: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 0x01000193);
  h ^= k + 0x9e3779b9;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return ((h ^ (h >>> 16)) >>> 0) / 4294967296;
}

function rankOf(
  run: SimulatedLogRun,
  pod: { podSet: string; index: number },
): { rank: number; world: number } {
  let rank = 0;
  let world = 0;
  let found = -1;
  for (const ps of run.podSets) {
    if (ps.name === pod.podSet) found = rank + pod.index;
    rank += ps.count;
    world += ps.count;
  }
  return { rank: Math.max(0, found), world };
}

/**
 * The pod's lines written by `upto` (ms, the clock the run's times are in), oldest first: those after
 * the cursor `after` only, at most the last `tail`. Empty for a pod the run does not have.
 */
export function simulatedLogLines(
  run: SimulatedLogRun,
  pod: { podSet: string; index: number },
  timeScale: number,
  upto: number,
  options: { after?: string | null; tail?: number | null } = {},
): SimulatedLogLine[] {
  const podSet = run.podSets.find((p) => p.name === pod.podSet);
  if (!podSet || pod.index < 0 || pod.index >= podSet.count) return [];
  const scale = timeScale > 0 ? timeScale : 1;
  const until = run.endedAt === null ? upto : Math.min(upto, run.endedAt);
  if (until < run.startedAt) return [];
  const stepMs = stepMsOf(run);
  const totalSteps = run.expectedDurationMs ? Math.max(1, Math.ceil(run.expectedDurationMs / stepMs)) : null;
  const declared = (at: number) => (at - run.startedAt) * scale;
  const wall = (d: number) => run.startedAt + Math.round(d / scale);
  const { rank, world } = rankOf(run, pod);
  const seed = `${run.jobId}/${run.admissionAt}/${rank}`;
  const who = `[${pod.podSet}-${pod.index}]`;
  const ended = run.endedAt !== null && run.endedAt <= upto;
  // A run that succeeded did all its steps, even when its end came a hair before the last one's time
  // (a timer fires up to a millisecond early): those steps are written at the end.
  const completed = ended && run.outcome === 'succeeded' && totalSteps !== null;
  const lastStep = completed
    ? totalSteps
    : Math.min(Math.floor(declared(until) / stepMs), totalSteps ?? Number.POSITIVE_INFINITY);
  const endK = Math.max(lastStep, Math.floor(declared(run.endedAt ?? until) / stepMs)) + 1;

  const prologue = (): SimulatedLogLine[] => {
    const gpus = podSet.gpusPerPod;
    const out: SimulatedLogLine[] = [
      {
        at: run.startedAt,
        stream: 'stdout',
        text: `${who} starting ${run.name} (${gpus} GPU${gpus === 1 ? '' : 's'})`,
        cursor: cursorOf(0, 0),
      },
    ];
    if (run.command?.length)
      out.push({
        at: run.startedAt,
        stream: 'stdout',
        text: `${who} exec: ${run.command.join(' ')}`,
        cursor: cursorOf(0, 1),
      });
    const d1 = Math.min(stepMs / 2, 2_000);
    if (declared(until) >= d1)
      out.push({
        at: wall(d1),
        stream: 'stdout',
        text:
          world > 1
            ? `${who} rank ${rank}/${world}: joined the rendezvous`
            : `${who} loading ${run.workloadType === 'INFERENCE' ? 'model weights' : 'dataset shards'}`,
        cursor: cursorOf(0, 2),
      });
    return out;
  };

  const step = (k: number): SimulatedLogLine[] => {
    const at = run.endedAt === null ? wall(k * stepMs) : Math.min(wall(k * stepMs), run.endedAt);
    const out: SimulatedLogLine[] = [];
    if (rank === 0) {
      const progress = totalSteps ? k / totalSteps : k / 1000;
      const text =
        run.workloadType === 'INFERENCE'
          ? `${who} served ${Math.round(900 + 200 * noise(seed, k))} requests, p50 ${(18 + 6 * noise(seed, -k)).toFixed(1)} ms`
          : `${who} step ${k}${totalSteps ? `/${totalSteps}` : ''} loss=${(0.3 + 2.2 * Math.exp(-3 * progress) + 0.05 * (noise(seed, k) - 0.5)).toFixed(4)} throughput=${Math.round(podSet.gpusPerPod * 850 * (0.97 + 0.06 * noise(seed, -k)))} samples/s`;
      out.push({ at, stream: 'stdout', text, cursor: cursorOf(k, 0) });
      const cp = run.checkpointIntervalMs;
      if (cp && cp > 0 && Math.floor((k * stepMs) / cp) > Math.floor(((k - 1) * stepMs) / cp))
        out.push({ at, stream: 'stdout', text: `${who} saved checkpoint step-${k}`, cursor: cursorOf(k, 1) });
    } else if (k % QUIET_EVERY === 0) {
      out.push({ at, stream: 'stdout', text: `${who} rank ${rank}: step ${k} done`, cursor: cursorOf(k, 0) });
    }
    return out;
  };

  const epilogue = (): SimulatedLogLine[] => {
    const at = run.endedAt!;
    const line = (sub: number, text: string, stream: 'stdout' | 'stderr' = 'stdout') => ({
      at,
      stream,
      text,
      cursor: cursorOf(endK, sub),
    });
    switch (run.outcome) {
      case 'succeeded':
        return [line(0, `${who} finished: ${lastStep} steps, exit code 0`)];
      case 'failed':
        return [
          line(0, 'Traceback (most recent call last):', 'stderr'),
          line(1, '  File "train.py", line 214, in <module>', 'stderr'),
          line(2, `RuntimeError: ${run.reason ?? 'the job failed'}`, 'stderr'),
        ];
      case 'preempted':
      case 'disrupted':
        return [
          line(
            0,
            `${who} received SIGTERM: ${run.checkpointIntervalMs ? `saving checkpoint at step ${lastStep}` : 'stopping'}`,
          ),
        ];
      case 'cancelled':
        return [line(0, `${who} received SIGTERM: cancelled`)];
      default:
        return [];
    }
  };

  const afterK = options.after ? stepOfCursor(options.after) : -1;
  const tail = options.tail ?? null;
  // A tail needs only the last steps: rank 0 writes at least one line per step, the others one per ten.
  const firstK = tail === null ? 0 : Math.max(0, lastStep - (tail + 1) * (rank === 0 ? 1 : QUIET_EVERY) - 1);
  const lines: SimulatedLogLine[] = [];
  const from = Math.max(firstK, afterK);
  if (from <= 0) lines.push(...prologue());
  for (let k = Math.max(1, from); k <= lastStep; k++) lines.push(...step(k));
  if (ended) lines.push(...epilogue());
  const after = options.after ?? null;
  const out = after === null ? lines : lines.filter((l) => l.cursor > after);
  return tail === null ? out : tail <= 0 ? [] : out.slice(-tail);
}
