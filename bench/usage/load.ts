// Scratch databases for the usage bench and the bulk load: the schema comes from the real
// migrations; tenants, projects, queues, users and jobs go through the ORM (a few thousand
// rows), the ledger and its rollup through bulk inserts (bulk.ts; MikroORM's unit of work
// would take many minutes for a million rows).

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/core';
import pg from 'pg';
import { Queue } from '../../src/persistence/cluster/entities.js';
import { uuidv7 } from '../../src/persistence/ids.js';
import { Job } from '../../src/persistence/jobs/entities.js';
import { migrate, openDatabase } from '../../src/persistence/orm.js';
import { Project, Tenant, User } from '../../src/persistence/tenancy/entities.js';
import { scopedEntityManager } from '../../src/persistence/tenant-filter.js';
import { hourlyDeltas, type LedgerRow } from '../../src/services/metering/ledger.js';
import { bulkWriter, type Dialect, HOURLY, knexOf, RECORDS } from './bulk.js';
import { emitRows, type Scenario, type ScenarioRow } from './scenario.js';

export { type Dialect, knexOf };

export interface ScratchDatabase {
  dialect: Dialect;
  orm: MikroORM;
  /** Where it is (a file, or the database name), for the report and for EXPLAIN afterwards. */
  where: string;
  /** DATABASE_URL for a gateway on it. */
  url: string;
  drop(): Promise<void>;
}

/** Generous timeouts: the load's VACUUM and the raw-ledger baseline may run for seconds. */
const TIMEOUTS = { connectMs: 5000, acquireMs: 60_000, statementMs: 600_000 };

/**
 * A fresh database with the current schema. PostgreSQL: `database` is created on the server
 * of `adminUrl` (dropped first if a previous run left it) and dropped by drop() unless kept.
 */
export async function openScratch(
  dialect: Dialect,
  opts: { adminUrl: string; database: string; keep: boolean },
): Promise<ScratchDatabase> {
  if (dialect === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fw-bench-usage-'));
    const file = path.join(dir, 'usage.db');
    const orm = await openDatabase({ database: { dialect, file }, timeouts: TIMEOUTS });
    await migrate(orm);
    return {
      dialect,
      orm,
      where: file,
      url: `sqlite:${file}`,
      drop: async () => {
        await orm.close(true);
        if (!opts.keep) fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  if (!/^[a-z_][a-z0-9_]*$/.test(opts.database))
    throw new Error(`bad scratch database name: ${opts.database}`);
  await adminQuery(opts.adminUrl, `drop database if exists ${opts.database}`);
  await adminQuery(opts.adminUrl, `create database ${opts.database}`);
  const url = new URL(opts.adminUrl);
  url.pathname = `/${opts.database}`;
  const orm = await openDatabase({ database: { dialect, url: url.toString() }, timeouts: TIMEOUTS });
  await migrate(orm);
  return {
    dialect,
    orm,
    where: `${url.host}/${opts.database}`,
    url: url.toString(),
    drop: async () => {
      await orm.close(true);
      if (!opts.keep) await adminQuery(opts.adminUrl, `drop database if exists ${opts.database}`);
    },
  };
}

async function adminQuery(adminUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Ids of what the scenario's indexes name. */
export interface LoadedIds {
  tenants: string[];
  /** projects[tenant][i] */
  projects: string[][];
  queues: string[][];
  users: string[];
  jobs: string[];
}

export interface LoadStats {
  records: number;
  rollupRows: number;
  jobs: number;
  /** Wall time of the ledger + rollup inserts (and VACUUM ANALYZE on PostgreSQL). */
  loadMs: number;
}

/** The dimension rows and jobs, through the ORM. */
async function seedDimensions(orm: MikroORM, scenario: Scenario): Promise<LoadedIds> {
  const em = scopedEntityManager(orm, { all: true });
  const ids: LoadedIds = { tenants: [], projects: [], queues: [], users: [], jobs: [] };
  await em.transactional(async (tx) => {
    for (let u = 0; u < scenario.options.users; u++) {
      const user = tx.create(User, {
        id: uuidv7(),
        email: `user${u}@bench.example`,
        name: `User ${u}`,
        isPlatformAdmin: false,
        externalId: null,
      });
      ids.users.push(user.id);
    }
    for (const t of scenario.tenants) {
      const tenant = tx.create(Tenant, {
        id: uuidv7(),
        slug: `bench-${t.index}`,
        name: `Bench tenant ${t.index}`,
        status: 'ACTIVE',
        projectsOpen: false,
      });
      ids.tenants.push(tenant.id);
      ids.queues.push(
        Array.from(
          { length: t.queues },
          (_, q) =>
            tx.create(Queue, {
              id: uuidv7(),
              name: `bench-${t.index}-q${q}`,
              tenant,
              cohort: null,
              quotas: {},
              weight: 1,
              queueingStrategy: 'BestEffortFIFO',
              preemption: {},
              isolationLevel: null,
              timeWindows: [],
              dedicatedPool: null,
            }).id,
        ),
      );
      ids.projects.push(
        Array.from(
          { length: t.projects },
          (_, p) =>
            tx.create(Project, {
              id: uuidv7(),
              tenant,
              slug: `p${p}`,
              name: `Project ${p}`,
              status: 'ACTIVE',
              archivedAt: null,
              defaultQueueId: null,
            }).id,
        ),
      );
    }
  });
  // Jobs in chunks: one flush of thousands of entities is slow in the unit of work's change sets.
  for (let i = 0; i < scenario.jobs.length; i += 500) {
    const tx = scopedEntityManager(orm, { all: true });
    for (const job of scenario.jobs.slice(i, i + 500)) {
      const flavors = [job.flavor.name];
      const created = tx.create(Job, {
        id: uuidv7(job.start),
        tenant: ids.tenants[job.tenant]!,
        project: job.project === null ? null : ids.projects[job.tenant]![job.project]!,
        queue: ids.queues[job.tenant]![job.queue]!,
        submittedBy: ids.users[job.user]!,
        name: `bench-${job.n}`,
        priorityClass: job.priorityClass,
        podSets: [{ name: 'main', count: 1, perPod: { gpu: job.gpuUnits, cpu: 0, memory: 0 }, flavors }],
        expectedDurationMs: job.end - job.start,
        maxRunMs: null,
        workload: null,
        // All finished, the ones still running at the month's end included: a gateway started on
        // this database (the HTTP stage) must find nothing to restore or charge.
        state:
          job.closedBy === 'failed'
            ? 'FAILED'
            : job.closedBy === 'cancelled' || job.closedBy === 'preempted'
              ? 'CANCELLED'
              : 'SUCCEEDED',
        admission: null,
        idempotencyKey: null,
        requestHash: createHash('sha256').update(String(job.n)).digest('hex'),
        submitTime: job.start,
        gpusRequested: job.gpuUnits,
        preemptionCount: 0,
        meteredFrom: null,
        exitReason: null,
        submittedAt: new Date(job.start),
        admittedAt: new Date(job.start),
        startedAt: new Date(job.start),
        finishedAt: new Date(job.end),
      });
      ids.jobs[job.n] = created.id;
    }
    await tx.flush();
  }
  return ids;
}

/**
 * Loads the scenario: dimensions and jobs, then the ledger in time order (a transaction per
 * TX_ROWS) while summing the rollup with the writer's own hourlyDeltas, then the rollup.
 * `progress` is told every few seconds.
 */
export async function loadScenario(
  db: ScratchDatabase,
  scenario: Scenario,
  progress: (line: string) => void = () => {},
): Promise<{ ids: LoadedIds; stats: LoadStats }> {
  const { orm, dialect } = db;
  const started = performance.now();
  const ids = await seedDimensions(orm, scenario);
  progress(
    `${scenario.jobs.length} jobs, ${ids.users.length} users, ${ids.projects.flat().length} projects seeded (${((performance.now() - started) / 1000).toFixed(1)} s)`,
  );
  const rollup = new Map<string, Delta>();
  const BATCH = 5000;
  const TX_ROWS = 100_000;
  const loadStart = performance.now();
  let done = 0;
  let lastNote = performance.now();
  const writer = await bulkWriter(orm, dialect);
  await emitRows(scenario, BATCH, async (rows: ScenarioRow[]) => {
    const ledger: LedgerRow[] = rows.map(({ job, ...r }) => ({
      ...r,
      jobId: ids.jobs[job.n]!,
      tenantId: ids.tenants[job.tenant]!,
      projectId: job.project === null ? null : ids.projects[job.tenant]![job.project]!,
      queueId: ids.queues[job.tenant]![job.queue]!,
      userId: ids.users[job.user]!,
    }));
    await writer.insert(
      RECORDS,
      ledger.map((r) => [
        uuidv7(r.startedAt.getTime()),
        r.jobId,
        r.tenantId,
        r.projectId,
        r.queueId,
        r.userId,
        r.priorityClass,
        r.flavor,
        r.startedAt,
        r.endedAt,
        r.durationMs,
        r.gpuUnits,
        r.gpuSeconds,
        r.cpuSeconds,
        r.memoryGibSeconds,
        r.usedGpuSeconds,
        r.unitPricePerHour,
        r.cost,
        r.closedBy,
        r.firstOfJob,
      ]),
    );
    mergeRollup(rollup, hourlyDeltas(ledger));
    done += rows.length;
    if (done % TX_ROWS < rows.length) await writer.commit();
    if (performance.now() - lastNote > 5000) {
      lastNote = performance.now();
      progress(
        `${done.toLocaleString('en')} / ${scenario.rows.toLocaleString('en')} ledger rows (${Math.round(done / ((lastNote - loadStart) / 1000)).toLocaleString('en')} rows/s)`,
      );
    }
  });
  const hourly = [...rollup.values()];
  for (let i = 0; i < hourly.length; i += BATCH) {
    await writer.insert(
      HOURLY,
      hourly
        .slice(i, i + BATCH)
        .map((h) => [
          uuidv7(h.hour.getTime()),
          h.hour,
          h.tenant,
          h.projectId,
          h.queueId,
          h.userId,
          h.priorityClass,
          h.flavor,
          h.gpuSeconds,
          h.usedGpuSeconds,
          h.measuredGpuSeconds,
          h.cpuSeconds,
          h.memoryGibSeconds,
          h.cost,
          h.jobs,
        ]),
    );
  }
  await writer.close();
  // What autovacuum would have done by the time a month of ledger is there: statistics and
  // the visibility map (index-only scans). SQLite keeps none unless the app runs ANALYZE; it does not.
  if (dialect === 'postgresql') await knexOf(orm).raw('vacuum analyze usage_records, usage_hourly');
  const stats: LoadStats = {
    records: done,
    rollupRows: rollup.size,
    jobs: scenario.jobs.length,
    loadMs: performance.now() - loadStart,
  };
  progress(
    `${done.toLocaleString('en')} ledger rows and ${rollup.size.toLocaleString('en')} rollup rows in ${(stats.loadMs / 1000).toFixed(1)} s`,
  );
  return { ids, stats };
}

type Delta = ReturnType<typeof hourlyDeltas>[number];
const SUMMED = [
  'gpuSeconds',
  'usedGpuSeconds',
  'measuredGpuSeconds',
  'cpuSeconds',
  'memoryGibSeconds',
  'cost',
  'jobs',
] as const;

/** Adds one batch's deltas into the month's rollup, as the writer's upsert does row by row. */
function mergeRollup(into: Map<string, Delta>, deltas: Delta[]): void {
  for (const d of deltas) {
    const key = [
      d.hour.getTime(),
      d.tenant,
      d.projectId,
      d.queueId,
      d.userId,
      d.priorityClass,
      d.flavor,
    ].join('\u0000');
    const cur = into.get(key);
    if (!cur) into.set(key, { ...d });
    else for (const f of SUMMED) cur[f] += d[f];
  }
}
