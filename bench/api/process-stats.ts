// Measurements of the server processes and the machine: CPU time, the JS thread's scheduling,
// RSS (all from /proc/<pid>/…), load average, and the commit the code came from. Reported beside
// wall-clock figures because the machine may be shared.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { ROOT } from './repo-root.js';

/** User + system CPU seconds of a process so far (/proc/<pid>/stat). */
export function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

/** The server's main (JS) thread: ns on a CPU and ns runnable but waiting for one (/proc/<pid>/schedstat). */
export function sched(pid: number): { runNs: number; waitNs: number } {
  const [run, wait] = fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').trim().split(/\s+/).map(Number);
  return { runNs: run ?? NaN, waitNs: wait ?? NaN };
}

/** "on-CPU % / waiting-for-CPU %" of the wall time between two schedstat readings. */
export function schedShare(
  before: { runNs: number; waitNs: number },
  after: { runNs: number; waitNs: number },
  wallMs: number,
): string {
  return `${((100 * (after.runNs - before.runNs)) / 1e6 / wallMs).toFixed(0)}% / ${((100 * (after.waitNs - before.waitNs)) / 1e6 / wallMs).toFixed(0)}%`;
}

/** The commit the server code came from, and whether the working tree differed from it. */
export function gitDescribe(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: ROOT,
      encoding: 'utf8',
    }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'schema', 'plugins'], {
      cwd: ROOT,
      encoding: 'utf8',
    }).trim();
    return `${head}${dirty ? ' with uncommitted changes under src/schema/plugins' : ''}`;
  } catch {
    return 'unknown (no git)';
  }
}

export function loadAvg(): string {
  return os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ');
}

export function rssKiB(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(status);
  return m ? Number(m[1]) : NaN;
}
