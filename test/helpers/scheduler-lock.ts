import type pg from 'pg';

/**
 * What the two-process PostgreSQL suites (replicas, split brain) check in the database
 * itself, independently of the server's own code: who holds the scheduler's advisory lock,
 * and whether two live jobs hold the same GPU.
 */

// Fairway's scheduler lock (leadership.ts): key 0x46616972776179 ("Fairway"). pg_locks shows
// a bigint advisory key as classid = high 32 bits, objid = low 32 bits, objsubid = 1.
const LOCK_CLASSID = 0x466169;
const LOCK_OBJID = 0x72776179;

/** The sessions holding the scheduler lock in the current database: pid and application_name. */
export async function schedulerLockHolders(sql: pg.Client): Promise<{ pid: number; app: string }[]> {
  const { rows } = await sql.query(
    `select l.pid, a.application_name as app from pg_locks l join pg_stat_activity a on a.pid = l.pid
      where l.locktype = 'advisory' and l.granted and l.database = (select oid from pg_database where datname = current_database())
        and l.classid = $1 and l.objid = $2 and l.objsubid = 1`,
    [LOCK_CLASSID, LOCK_OBJID],
  );
  return rows.map((r) => ({ pid: Number(r.pid), app: String(r.app) }));
}

export interface JobRowPlacement {
  id: string;
  state: string;
  admission: { podSets: { placements: { node: string; gpuIndices?: number[] }[] }[] } | null;
}

/** (node, GPU) pairs held by more than one ADMITTED/RUNNING job (for jobs that ask for whole GPUs). */
export function sharedGpus(rows: JobRowPlacement[]): string[] {
  const held = new Map<string, string[]>();
  for (const r of rows) {
    if (r.state !== 'ADMITTED' && r.state !== 'RUNNING') continue;
    for (const ps of r.admission?.podSets ?? [])
      for (const pl of ps.placements)
        for (const i of pl.gpuIndices ?? [])
          held.set(`${pl.node}#${i}`, [...(held.get(`${pl.node}#${i}`) ?? []), r.id]);
  }
  return [...held].filter(([, ids]) => ids.length > 1).map(([k, ids]) => `${k}: ${ids.join(', ')}`);
}
