// Open-file limits of the bench and of the servers it starts. Node 20 has no getrlimit/setrlimit,
// so the limits are read from /proc/<pid>/limits; a server child is started through `sh -c
// 'ulimit -n <hard>; exec node …'` when the soft limit is below the hard one (part 3 holds one
// socket per subscriber on each side: 10,000 subscribers need > 10,000 descriptors in both).
import fs from 'node:fs';

export interface FdLimit {
  soft: number;
  hard: number;
}

/** "Max open files" of a process (`self` = this one); Infinity for "unlimited", NaN if unreadable. */
export function openFilesLimit(pid: number | 'self' = 'self'): FdLimit {
  try {
    const line = fs
      .readFileSync(`/proc/${pid}/limits`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const [soft, hard] = (line ?? '').replace('Max open files', '').trim().split(/\s+/);
    const num = (s: string | undefined) => (s === 'unlimited' ? Infinity : Number(s));
    return { soft: num(soft), hard: num(hard) };
  } catch {
    return { soft: NaN, hard: NaN };
  }
}

/** Descriptors this process has open now (/proc/self/fd). */
export function openFiles(pid: number | 'self' = 'self'): number {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return NaN;
  }
}

/**
 * The command that starts `node <args>` with its soft open-file limit raised to the hard one,
 * when this process's soft limit is lower (a child inherits the parent's limits otherwise).
 */
export function withRaisedFdLimit(nodeArgs: string[]): { file: string; args: string[] } {
  const { soft, hard } = openFilesLimit();
  if (!(soft < hard)) return { file: process.execPath, args: nodeArgs };
  const limit = Number.isFinite(hard) ? String(hard) : 'unlimited';
  // exec keeps the pid, so /proc/<pid>/… readings are the server's own.
  return {
    file: '/bin/sh',
    args: ['-c', `ulimit -n ${limit} 2>/dev/null || true; exec "$0" "$@"`, process.execPath, ...nodeArgs],
  };
}
