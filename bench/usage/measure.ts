// Timing of one query: wall time per call, and CPU per call — this process's (process.cpuUsage:
// the ORM, knex, the driver, and on SQLite the database itself, which runs in-process) and, on
// PostgreSQL, the server backends' (/proc/<pid>/stat of the connections to the scratch database;
// clock ticks of 10 ms, so only the mean over the run is meaningful).
import fs from 'node:fs';
import type { MikroORM } from '@mikro-orm/core';
import { type Dialect, knexOf } from './load.js';

export interface Timing {
  iterations: number;
  wallMs: number[];
  /** This process's CPU per call. */
  nodeCpuMs: number[];
  /** PostgreSQL backends' CPU over the run ÷ iterations (null: SQLite, or /proc not readable). */
  dbCpuMsPerCall: number | null;
  /** The server process's CPU over the run ÷ iterations (the gateway, when asked over HTTP). */
  serverCpuMsPerCall: number | null;
}

export function percentile(xs: readonly number[], q: number): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

/** CPU ms of each PostgreSQL backend connected to this database (pid → ms); null when unreadable. */
export async function backendCpu(orm: MikroORM): Promise<Map<number, number> | null> {
  const result = (await knexOf(orm).raw(
    'select pid from pg_stat_activity where datname = current_database()',
  )) as { rows: { pid: number }[] };
  const out = new Map<number, number>();
  for (const { pid } of result.rows) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(pid, (Number(fields[11]) + Number(fields[12])) * 10); // utime + stime, USER_HZ = 100
    } catch {
      return null; // another host or namespace: the server's CPU is not ours to read
    }
  }
  return out;
}

/** Runs `call` `warmup` times untimed, then `iterations` times timed, one after another. */
export async function measure(
  orm: MikroORM,
  dialect: Dialect,
  call: () => Promise<unknown>,
  opts: { warmup: number; iterations: number; serverCpuMs?: () => number },
): Promise<Timing> {
  for (let i = 0; i < opts.warmup; i++) await call();
  const before = dialect === 'postgresql' ? await backendCpu(orm) : null;
  const serverBefore = opts.serverCpuMs?.() ?? null;
  const wallMs: number[] = [];
  const nodeCpuMs: number[] = [];
  for (let i = 0; i < opts.iterations; i++) {
    const cpu = process.cpuUsage();
    const t = performance.now();
    await call();
    wallMs.push(performance.now() - t);
    const used = process.cpuUsage(cpu);
    nodeCpuMs.push((used.user + used.system) / 1000);
  }
  const serverCpuMsPerCall =
    serverBefore === null ? null : (opts.serverCpuMs!() - serverBefore) / opts.iterations;
  let dbCpuMsPerCall: number | null = null;
  if (before) {
    const after = await backendCpu(orm);
    if (after) {
      let total = 0;
      for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
      dbCpuMsPerCall = total / opts.iterations;
    }
  }
  return { iterations: opts.iterations, wallMs, nodeCpuMs, dbCpuMsPerCall, serverCpuMsPerCall };
}
