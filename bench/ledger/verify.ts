// What the ledger must hold after the run, computed from the bench's own model of the charges
// (not from the writer's code), and the checks against the database: the flavor-unit
// milliseconds and the GPU-seconds per flavor, the rows, and the rollup against the ledger.
import type { MikroORM } from '@mikro-orm/core';
import { type Dialect, knexOf } from '../usage/load.js';
import { type PlannedJob, slicesOf, unitsByFlavor } from './scenario.js';

const HOUR_MS = 3_600_000;

export class ExpectedCharges {
  /** Σ flavor units × ms charged, per flavor: integers, so exact. */
  readonly unitMs = new Map<string, number>();
  rows = 0;
  /** Charged intervals cut in two or more rows by an hour boundary. */
  crossings = 0;

  /** A charge of `job` for [from, to). */
  add(job: PlannedJob, from: number, to: number): void {
    if (to <= from) return;
    const cuts = Math.floor((to - 1) / HOUR_MS) - Math.floor(from / HOUR_MS);
    if (cuts > 0) this.crossings++;
    for (const [flavor, units] of unitsByFlavor(job)) {
      this.unitMs.set(flavor, (this.unitMs.get(flavor) ?? 0) + units * (to - from));
      this.rows += 1 + cuts;
    }
  }

  gpuSeconds(flavor: string): number {
    return (this.unitMs.get(flavor) ?? 0) / slicesOf(flavor) / 1000;
  }
}

export interface Verification {
  rows: number;
  gpuSeconds: number;
  expectedGpuSeconds: number;
  rollupRows: number;
  problems: string[];
}

const num = (v: unknown) => Number(v ?? 0);

/**
 * Fails (returns problems) unless the ledger holds exactly the expected unit-ms per flavor
 * (integers: exact) and GPU-seconds (exact for whole GPUs; a MIG slice is 1/7 of a device,
 * not a binary fraction, so its sum may differ in the last bits: 1e-9 relative), the rows
 * expected, one first row per job, and a rollup whose sums equal the ledger's per hour and flavor
 * (from `sinceHourMs`, the first hour charged).
 */
export async function verifyLedger(
  orm: MikroORM,
  dialect: Dialect,
  expected: ExpectedCharges,
  jobs: number,
  sinceHourMs: number,
): Promise<Verification> {
  const knex = knexOf(orm);
  const problems: string[] = [];
  const ledger = (await knex('usage_records')
    .select('flavor')
    .sum({ unit_ms: knex.raw('gpu_units * duration_ms') })
    .sum({ gpu_seconds: 'gpu_seconds' })
    .count({ n: '*' })
    .groupBy('flavor')) as { flavor: string; unit_ms: unknown; gpu_seconds: unknown; n: unknown }[];
  let rows = 0;
  let gpuSeconds = 0;
  let expectedGpuSeconds = 0;
  const flavors = new Set([...expected.unitMs.keys(), ...ledger.map((l) => l.flavor)]);
  for (const flavor of flavors) {
    const got = ledger.find((l) => l.flavor === flavor);
    const wantUnitMs = expected.unitMs.get(flavor) ?? 0;
    const want = expected.gpuSeconds(flavor);
    const unitMs = num(got?.unit_ms);
    const gs = num(got?.gpu_seconds);
    rows += num(got?.n);
    gpuSeconds += gs;
    expectedGpuSeconds += want;
    if (unitMs !== wantUnitMs) problems.push(`${flavor}: Σ units × ms ${unitMs} ≠ expected ${wantUnitMs}`);
    const exact = slicesOf(flavor) === 1;
    if (exact ? gs !== want : Math.abs(gs - want) > 1e-9 * Math.max(1, want))
      problems.push(`${flavor}: Σ gpuSeconds ${gs} ≠ expected ${want}`);
  }
  if (rows !== expected.rows) problems.push(`ledger rows ${rows} ≠ expected ${expected.rows}`);
  const firsts = num(
    ((await knex('usage_records').where('first_of_job', true).count({ n: '*' })) as { n: unknown }[])[0]?.n,
  );
  if (firsts !== jobs) problems.push(`first rows ${firsts} ≠ jobs ${jobs}`);

  // The rollup against the ledger, per UTC hour and flavor (the ledger's hour is its start's).
  // Both as epoch ms (SQLite stores datetimes as ms integers; PostgreSQL as timestamptz).
  const pg = dialect === 'postgresql';
  const hourOf = knex.raw(
    pg
      ? `floor(extract(epoch from started_at) / 3600) * ${HOUR_MS}`
      : `(started_at / ${HOUR_MS}) * ${HOUR_MS}`,
  );
  const rollupHour = knex.raw(pg ? 'extract(epoch from hour) * 1000' : 'hour');
  const fromLedger = (await knex('usage_records')
    .select({ hour: hourOf, flavor: 'flavor' })
    .sum({ g: 'gpu_seconds', c: 'cost', cpu: 'cpu_seconds' })
    .sum({ j: knex.raw(`case when first_of_job then 1 else 0 end`) })
    .groupByRaw('1, 2')) as {
    hour: unknown;
    flavor: string;
    g: unknown;
    c: unknown;
    cpu: unknown;
    j: unknown;
  }[];
  // Seeded history (earlier hours, no ledger rows) is left out.
  const fromRollup = (await knex('usage_hourly')
    .where('hour', '>=', pg ? new Date(sinceHourMs) : sinceHourMs)
    .select({ hour: rollupHour, flavor: 'flavor' })
    .sum({ g: 'gpu_seconds', c: 'cost', cpu: 'cpu_seconds', j: 'jobs' })
    .count({ n: '*' })
    .groupByRaw('1, 2')) as {
    hour: unknown;
    flavor: string;
    g: unknown;
    c: unknown;
    cpu: unknown;
    j: unknown;
    n: unknown;
  }[];
  const key = (hour: unknown, flavor: string) => `${new Date(Number(hour)).toISOString()} ${flavor}`;
  const rollup = new Map(fromRollup.map((r) => [key(r.hour, r.flavor), r]));
  const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
  for (const l of fromLedger) {
    const k = key(l.hour, l.flavor);
    const r = rollup.get(k);
    rollup.delete(k);
    if (!r) problems.push(`rollup: no row for ${k}`);
    else
      for (const f of ['g', 'c', 'cpu', 'j'] as const)
        if (!close(num(l[f]), num(r[f])))
          problems.push(`rollup ${k} ${f}: ${num(r[f])} ≠ ledger ${num(l[f])}`);
  }
  for (const k of rollup.keys()) problems.push(`rollup: ${k} has no ledger rows`);
  const rollupRows = fromRollup.reduce((a, r) => a + num(r.n), 0);
  return { rows, gpuSeconds, expectedGpuSeconds, rollupRows, problems };
}
