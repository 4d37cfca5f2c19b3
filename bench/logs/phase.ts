// One phase of bench:logs on a fresh gateway: the jobs running, the gateway's CPU with no follower,
// the followers opened (RSS before and after), a measured window, then every job cancelled and the
// end of each stream (jobLogs: the `ended` batch; jobUpdated: the CANCELLED event) waited for.
import { performance } from 'node:perf_hooks';
import { sleep } from '../api/load-client.js';
import { cpuSeconds, rssKiB, sched } from '../api/process-stats.js';
import { closeFollowers, type Follower, type FollowerKind, now, openFollowers } from './followers.js';
import { capsFor, OPEN_BATCH, setUp } from './setup.js';
import { type Completeness, completeness } from './verify.js';

export interface PhaseOptions {
  kind: FollowerKind;
  jobs: number;
  perJob: number;
  timeScale: number;
  seconds: number;
  tail: number;
}

export interface PhaseResult {
  kind: FollowerKind;
  followers: number;
  opened: number;
  openErrors: string[];
  openSeconds: number;
  /** Gateway CPU ms per wall second: jobs running, no follower; and during the window. */
  idleCpuMsPerS: number;
  windowCpuMsPerS: number;
  windowSeconds: number;
  windowCpuS: number;
  windowSched: { runNs: number; waitNs: number };
  benchCpuS: number;
  rssBeforeKiB: number;
  rssAfterKiB: number;
  /** At the window's end. */
  rssEndKiB: number;
  /** Messages (batches or events) and lines received inside the window. */
  messages: number;
  lines: number;
  latencyMs: number[];
  /** Per follower: lines in its first batch (the `tail`). */
  firstBatchLines: number[];
  /** Lines that were written before their follower opened but came after its first batch. */
  stale: number;
  /** jobLogs: by the window's end, and over the whole streams once they ended. */
  check: Completeness | null;
  finalCheck: Completeness | null;
  errorsDuring: string[];
  cancel: { expected: number; delivered: number; latencyMs: number[]; cpuS: number; seconds: number };
  gatewayErrors: string[];
}

const cpuNow = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1e6;
};

export async function runPhase(o: PhaseOptions): Promise<PhaseResult> {
  const followersWanted = o.jobs * o.perJob;
  const setup = await setUp({ jobs: o.jobs, timeScale: o.timeScale, env: capsFor(followersWanted).env });
  const pid = setup.gateway.pid;
  let followers: Follower[] = [];
  try {
    const tag = `[bench:logs] ${o.kind}`;
    console.error(
      `${tag}: ${o.jobs} jobs RUNNING at time scale ${o.timeScale}; measuring the gateway without followers …`,
    );
    // The gateway with the jobs running and nobody following.
    await sleep(2000);
    const idleS = Math.min(10, Math.max(3, o.seconds / 2));
    const idle0 = cpuSeconds(pid);
    const idleT0 = performance.now();
    await sleep(idleS * 1000);
    const idleCpuMsPerS = ((cpuSeconds(pid) - idle0) * 1000) / ((performance.now() - idleT0) / 1000);
    const rssBeforeKiB = rssKiB(pid);

    const openedAt = now();
    followers = await openFollowers(
      setup.gateway.url,
      setup.member,
      o.kind,
      setup.jobIds,
      o.perJob,
      o.tail,
      OPEN_BATCH,
    );
    const openSeconds = (now() - openedAt) / 1000;
    const openErrors = followers.flatMap((f) => f.errors);
    const opened = followers.filter((f) => f.errors.length === 0 && !f.completed).length;
    console.error(
      `${tag}: ${opened} of ${followers.length} followers open in ${openSeconds.toFixed(1)} s${openErrors.length ? `; errors: ${[...new Set(openErrors)].slice(0, 5).join(' | ')}` : ''}`,
    );
    await sleep(2000);
    const rssAfterKiB = rssKiB(pid);

    // ── the window ──
    const t0 = now();
    const cpu0 = cpuSeconds(pid);
    const sched0 = sched(pid);
    const bench0 = cpuNow();
    const errors0 = followers.reduce((s, f) => s + f.errors.length, 0);
    await sleep(o.seconds * 1000);
    const t1 = now();
    const cpu1 = cpuSeconds(pid);
    const sched1 = sched(pid);
    const bench1 = cpuNow();
    const rssEndKiB = rssKiB(pid);
    const windowSeconds = (t1 - t0) / 1000;
    // What was written by t1 has this long to arrive before it counts as missing.
    await sleep(2000);

    let messages = 0;
    let lines = 0;
    let stale = 0;
    const latencyMs: number[] = [];
    for (const f of followers) {
      for (const m of f.messages) if (m.recv >= t0 && m.recv < t1) messages++;
      for (const l of f.lines) {
        if (l.backlog) continue;
        if (l.at < openedAt) stale++;
        if (l.recv < t0 || l.recv >= t1) continue;
        lines++;
        latencyMs.push(l.recv - l.at);
      }
    }
    const check = o.kind === 'jobLogs' ? completeness(followers, o.timeScale, t1) : null;
    const errorsDuring = followers.flatMap((f) => f.errors).slice(errors0);

    // ── every job cancelled: the streams' ends ──
    console.error(`${tag}: window done (${lines} lines, ${messages} messages); cancelling the jobs …`);
    const c0 = cpuSeconds(pid);
    const cancelT0 = now();
    const sentAt = new Map<string, number>();
    const seen = new Map<Follower, number>();
    const done = (f: Follower) =>
      f.messages.some((m) => (o.kind === 'jobLogs' ? m.ended : m.state === 'CANCELLED'));
    await Promise.all(
      setup.jobIds.map(async (id) => {
        sentAt.set(id, now());
        await setup.gql(setup.member, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, { id });
      }),
    );
    // The ended batch may wait for the pods' archive (follow.ts ARCHIVE_WAIT_MS, 10 s).
    const until = now() + 30_000;
    const live = followers.filter((f) => f.errors.length === 0 && !f.completed);
    while (live.some((f) => !done(f)) && now() < until) await sleep(50);
    const cancelCpuS = cpuSeconds(pid) - c0;
    const cancelSeconds = (now() - cancelT0) / 1000;
    const cancelLatency: number[] = [];
    for (const f of followers) {
      const m = f.messages.find((x) => (o.kind === 'jobLogs' ? x.ended : x.state === 'CANCELLED'));
      if (m) {
        seen.set(f, m.recv);
        cancelLatency.push(m.recv - sentAt.get(f.jobId)!);
      }
    }
    console.error(
      `${tag}: ${seen.size} of ${followers.length} streams saw the cancel in ${cancelSeconds.toFixed(1)} s`,
    );
    return {
      kind: o.kind,
      followers: followers.length,
      opened,
      openErrors,
      openSeconds,
      idleCpuMsPerS,
      windowCpuMsPerS: ((cpu1 - cpu0) * 1000) / windowSeconds,
      windowSeconds,
      windowCpuS: cpu1 - cpu0,
      windowSched: { runNs: sched1.runNs - sched0.runNs, waitNs: sched1.waitNs - sched0.waitNs },
      benchCpuS: bench1 - bench0,
      rssBeforeKiB,
      rssAfterKiB,
      rssEndKiB,
      messages,
      lines,
      latencyMs,
      stale,
      firstBatchLines: followers.map((f) => f.lines.filter((l) => l.backlog).length),
      check,
      finalCheck: o.kind === 'jobLogs' ? completeness(followers, o.timeScale) : null,
      errorsDuring,
      cancel: {
        expected: followers.length,
        delivered: seen.size,
        latencyMs: cancelLatency,
        cpuS: cancelCpuS,
        seconds: cancelSeconds,
      },
      gatewayErrors: setup.gateway.stderr
        .join('')
        .split('\n')
        .filter((l) => /error|warn/i.test(l))
        .slice(0, 5),
    };
  } finally {
    await closeFollowers(followers).catch(() => undefined);
    await setup.close();
  }
}
