// Part 2c: submits one by one in a closed loop (BENCH_CLOSED_CLIENTS = 32 callers, each sending its
// next `submitJob` when the previous is answered) for BENCH_CLOSED_SECONDS on SQLite and
// PostgreSQL: acknowledged/s, admitted/s (the leader's `fairway_scheduler_admitted_total` counter
// on /metrics, read at the window's two ends and once more after a drain), answer latency, and the
// server's CPU per acknowledged job (admitting, starting and finishing it included).

import { admittedTotal } from './batch-submit.js';
import { closedLoop, sleep } from './load-client.js';
import { createBenchDatabase, DEFAULT_PG_URL, redact } from './pg-database.js';
import { cpuSeconds, loadAvg } from './process-stats.js';
import { f1, ms, out, reportServerErrors, table, verdict } from './report.js';
import { startFairway } from './servers.js';
import { auroraIds, SUBMIT, settle } from './tenant-setup.js';

const TARGET = 500; // submits/s acknowledged and admitted
const DRAIN_MS = 5000;

interface ClosedResult {
  database: string;
  acked: number;
  ackedPerS: number;
  admittedPerS: number;
  admittedAfterDrain: number;
  p50: number;
  p99: number;
  cpuMsPerJob: number;
  share: string;
  errors: number;
}

async function onServer(database: string, url: string | undefined, clients: number, seconds: number) {
  const server = await startFairway(1000, [], { databaseUrl: url });
  try {
    const ids = await auroraIds(server);
    const member = server.tokens['aurora-research/MEMBER']!;
    const admin = server.tokens['aurora-research/TENANT_ADMIN']!;
    const queue = 'aurora-training';
    // No idempotency key: every call is a new job (the same body each time).
    const body = JSON.stringify({
      query: SUBMIT,
      variables: {
        in: {
          queueId: ids.queueId,
          projectId: ids.projectId,
          name: 'closed-loop',
          podSets: [{ gpusPerPod: 1, flavors: ['a100-1g.10gb'] }],
          expectedDurationSeconds: 30,
        },
      },
    });
    const warmupMs = 2000;
    const before = { admitted: 0, cpu: 0 };
    // The counter and CPU at the start of the measured window (closedLoop measures its own requests).
    const measure = closedLoop(server.url, member, body, clients, warmupMs, seconds * 1000, server.pid);
    await sleep(warmupMs);
    before.admitted = await admittedTotal(server, queue);
    before.cpu = cpuSeconds(server.pid);
    const result = await measure;
    const inWindow = (await admittedTotal(server, queue)) - before.admitted;
    await sleep(DRAIN_MS);
    const afterDrain = (await admittedTotal(server, queue)) - before.admitted;
    const cpu = cpuSeconds(server.pid) - before.cpu;
    await settle(server, ids, admin, 20_000);
    return {
      database,
      acked: result.ok,
      ackedPerS: result.ok / result.seconds,
      admittedPerS: inWindow / result.seconds,
      admittedAfterDrain: afterDrain,
      p50: result.p50,
      p99: result.p99,
      cpuMsPerJob: (1000 * cpu) / Math.max(1, result.ok),
      share: result.share,
      errors: result.errors,
    } satisfies ClosedResult;
  } finally {
    reportServerErrors(server);
    await server.stop();
  }
}

export async function submitClosedLoop(): Promise<void> {
  const clients = Number(process.env.BENCH_CLOSED_CLIENTS ?? 32);
  const seconds = Number(process.env.BENCH_CLOSED_SECONDS ?? 10);
  out(`## 2c. Submits one by one, ${clients} callers in a closed loop (SQLite and PostgreSQL)`);
  out();
  out(
    `Target, on each database: ≥ ${TARGET} submits/s acknowledged and admitted, one by one, ${clients} callers in a closed loop.`,
  );
  out();
  const databases: { name: string; url?: string; drop?: () => Promise<void>; where: string }[] = [
    { name: 'SQLite', where: 'SQLite in the temp data dir' },
  ];
  const notes: string[] = [];
  const pgAdmin = process.env.BENCH_PG_URL || DEFAULT_PG_URL;
  const pg = await createBenchDatabase(pgAdmin);
  if ('error' in pg) notes.push(`PostgreSQL not measured: ${redact(pgAdmin)} (BENCH_PG_URL): ${pg.error}.`);
  else
    databases.push({ name: 'PostgreSQL', url: pg.url, drop: pg.drop, where: `PostgreSQL ${redact(pg.url)}` });
  const results: ClosedResult[] = [];
  for (const db of databases) {
    try {
      results.push(await onServer(db.name, db.url, clients, seconds));
    } finally {
      await db.drop?.();
    }
    console.log(
      `  2c ${db.name}: ${f1(results.at(-1)!.ackedPerS)} acked/s, ${f1(results.at(-1)!.admittedPerS)} admitted/s`,
    );
  }
  out(
    `${clients} callers (one aurora MEMBER, keep-alive HTTP/1.1), each sending its next \`submitJob\` when the previous is answered, no idempotency key; 2 s unmeasured warm-up, then ${seconds} s measured (BENCH_CLOSED_SECONDS). ` +
      'Jobs: 1 MIG slice, 30 declared s at time scale 1000 (30 ms real) into aurora-training, so capacity never holds a job back. ' +
      '"admitted/s" = growth of the leader\'s `fairway_scheduler_admitted_total{queue}` over the measured window / its length; "after drain" = its growth until ' +
      `${DRAIN_MS / 1000} s after the window (a leader that lags admits the rest then; it can include warm-up jobs admitted late). CPU per job = server process CPU from the window's start to the end of the drain / acknowledged submits.`,
  );
  out();
  out(
    table(
      [
        'database',
        'acked',
        'acked/s',
        'admitted/s',
        'admitted after drain',
        'answer p50 ms',
        'p99',
        'server CPU ms per job',
        'server thread on-CPU / waiting',
        'errors',
      ],
      results.map((r) => [
        r.database,
        String(r.acked),
        f1(r.ackedPerS),
        f1(r.admittedPerS),
        `${r.admittedAfterDrain}/${r.acked}`,
        ms(r.p50),
        ms(r.p99),
        ms(r.cpuMsPerJob),
        r.share,
        String(r.errors),
      ]),
    ),
  );
  out();
  for (const r of results)
    out(
      `- ${r.database}: ${f1(r.ackedPerS)} acknowledged and ${f1(r.admittedPerS)} admitted submits/s (target ≥ ${TARGET} each: ${verdict(Math.min(r.ackedPerS, r.admittedPerS), '>=', TARGET)}), ${ms(r.cpuMsPerJob)} ms server CPU per job.`,
    );
  for (const n of [...notes, ...databases.map((d) => `${d.name}: ${d.where}.`)]) out(`- ${n}`);
  out(`- Load average after: ${loadAvg()}.`);
  out();
}
