// Optional month-to-date rollup history for the bench's tenants (BENCH_HISTORY_ROWS): the
// budget check after each charge sums the tenant's `usage_hourly` rows of the month, so its cost
// grows with the month; with no history the bench measures the 1st of a month. Rows go through
// bench/usage/bulk.ts (not the writer), hour by hour from the month's start to T0's hour, each
// hour the same number of distinct keys, tenant 0 (the big one) first.
import type { MikroORM } from '@mikro-orm/core';
import { uuidv7 } from '../../src/persistence/ids.js';
import { bulkWriter, type Dialect, HOURLY, knexOf } from '../usage/bulk.js';
import { CLASSES, FLAVORS } from '../usage/scenario.js';
import type { SeededIds } from './scenario.js';

const HOUR_MS = 3_600_000;

export async function seedRollupHistory(
  orm: MikroORM,
  dialect: Dialect,
  ids: SeededIds,
  rows: number,
  beforeMs: number,
): Promise<number> {
  if (rows <= 0) return 0;
  const d = new Date(beforeMs);
  const monthStart = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const hours = Math.floor((beforeMs - monthStart) / HOUR_MS);
  if (hours < 1) return 0;
  const perHour = Math.ceil(rows / hours);
  // Key digits, slowest first: tenant, project ('' + ids), queue, user, class, flavor.
  const radix = [
    ids.tenants.length,
    ids.projects[0]!.length + 1,
    ids.queues[0]!.length,
    ids.users.length,
    CLASSES.length,
    FLAVORS.length,
  ];
  const keys = radix.reduce((a, b) => a * b, 1);
  if (perHour > keys) throw new Error(`history: ${perHour} rows an hour, but only ${keys} distinct keys`);
  const writer = await bulkWriter(orm, dialect);
  let written = 0;
  for (let h = 0; h < hours && written < rows; h++) {
    const hour = new Date(monthStart + h * HOUR_MS);
    const batch: unknown[][] = [];
    for (let k = 0; k < perHour && written + batch.length < rows; k++) {
      let rest = k;
      const digit = radix.map(() => 0);
      for (let i = radix.length - 1; i >= 0; i--) {
        digit[i] = rest % radix[i]!;
        rest = Math.floor(rest / radix[i]!);
      }
      const [t, p, q, u, c, f] = digit as [number, number, number, number, number, number];
      const flavor = FLAVORS[f]!;
      const gpuSeconds = 3600 / flavor.slicesPerGpu;
      const cost = flavor.price * CLASSES[c]!.multiplier;
      batch.push([
        uuidv7(hour.getTime()),
        hour,
        ids.tenants[t]!,
        p === 0 ? '' : ids.projects[t]![p - 1]!,
        ids.queues[t]![q]!,
        ids.users[u]!,
        CLASSES[c]!.name,
        flavor.name,
        gpuSeconds,
        0,
        0,
        8 * 3600,
        64 * 3600,
        cost,
        0,
      ]);
    }
    await writer.insert(HOURLY, batch);
    written += batch.length;
    if (h % 100 === 99) await writer.commit();
  }
  await writer.close();
  if (dialect === 'postgresql') await knexOf(orm).raw('vacuum analyze usage_hourly');
  return written;
}
