// Part 2: submits, open loop at 200, 500 and 1,000 submits/s (BENCH_SUBMIT_RATES), each for
// BENCH_SUBMIT_SECONDS (10), on SQLite and on PostgreSQL (a fresh database per run); answer
// latency and submit → ADMITTED as seen by a graphql-ws `tenantEvents` subscriber, both measured
// from the moment each submit was due.
import { performance } from 'node:perf_hooks';
import { sleep, wsClient } from './load-client.js';
import { createBenchDatabase, DEFAULT_PG_URL, redact } from './pg-database.js';
import { loadAvg } from './process-stats.js';
import { f1, ms, out, pct, reportServerErrors, table, verdict } from './report.js';
import { startFairway } from './servers.js';
import {
  BACKLOG_S,
  DRAIN_S,
  openLoopRate,
  type RateResult,
  type Seen,
  SUBMIT_SOCKETS,
} from './submit-open-loop.js';
import { auroraIds, settle, submitMany } from './tenant-setup.js';

const ACK_TARGET = 500; // acknowledged submits/s sustained over the window
const SEEN_P99_TARGET = 250; // ms, submit → ADMITTED seen, at 200/s offered

async function onServer(
  database: string,
  databaseUrl: string | undefined,
  rates: number[],
  seconds: number,
  skipped: string[],
): Promise<RateResult[]> {
  const server = await startFairway(1000, [], { databaseUrl });
  const results: RateResult[] = [];
  let closing = false;
  try {
    const ids = await auroraIds(server);
    const member = server.tokens['aurora-research/MEMBER']!;
    const admin = server.tokens['aurora-research/TENANT_ADMIN']!;
    const client = wsClient(server, admin);
    // jobId → when its ADMITTED event arrived and its own timestamp (may come before the submit's answer).
    const admittedAt = new Map<string, Seen>();
    let anyEvent = false;
    const connected = new Promise<void>((r) => client.on('connected', () => r()));
    const dispose = client.subscribe<{ tenantEvents: { kind: string; jobId: string | null; at: string } }>(
      {
        query: `subscription($t: ID!) { tenantEvents(tenantId: $t) { kind jobId at } }`,
        variables: { t: ids.tenantId },
      },
      {
        next: (m) => {
          const recv = performance.timeOrigin + performance.now();
          const e = m.data?.tenantEvents;
          if (e?.kind === 'ADMITTED' && e.jobId && !admittedAt.has(e.jobId))
            admittedAt.set(e.jobId, { recv, at: Date.parse(e.at) });
          anyEvent = true;
        },
        error: (e) => {
          if (!closing)
            console.error('tenantEvents subscription failed:', e instanceof Error ? e.message : e);
        },
        complete: () => undefined,
      },
    );
    await connected;
    // The subscription is live once a probe job is seen admitted.
    for (let i = 0; i < 200 && !anyEvent; i++) {
      if (i % 20 === 0)
        await submitMany(server, member, 1, 1, () => ({
          queueId: ids.queueId,
          name: `probe-${i}`,
          podSets: [{ gpusPerPod: 1, flavors: ['a100-1g.10gb'] }],
          expectedDurationSeconds: 1,
        }));
      await sleep(50);
    }
    for (const rate of rates) {
      const behind = results.find((r) => r.stoppedAtS !== null || r.unanswered > 0);
      if (behind) {
        // A server that could not keep up with a lower rate only builds a longer backlog at a higher one.
        skipped.push(`${database} ${rate}/s not run: the server fell behind at ${behind.rate}/s.`);
        continue;
      }
      const r = await openLoopRate(
        server,
        ids,
        member,
        rate,
        seconds,
        admittedAt,
        `${database.toLowerCase()}-r${rate}`,
      );
      results.push(r);
      console.log(
        `  ${database} ${rate}/s: ${f1(r.ackedPerS)} acked/s, ${r.seen}/${r.offered} ADMITTED seen, p50 ${show(pct(r.seenAdmitted, 0.5))} p99 ${show(pct(r.seenAdmitted, 0.99))}`,
      );
      // Let what is still in flight finish (30 ms jobs) before the next rate.
      await settle(server, ids, admin, 20_000);
    }
    closing = true;
    dispose();
    await client.dispose();
    return results;
  } finally {
    closing = true;
    reportServerErrors(server);
    await server.stop();
  }
}

const show = (v: number) => (v === Infinity ? `> ${DRAIN_S} s` : ms(v));

export async function submitToAdmitted(seconds: number, rates: number[]): Promise<void> {
  out(
    '## 2. Submits: acknowledged/s, and submit → ADMITTED seen by a `tenantEvents` subscriber (SQLite and PostgreSQL)',
  );
  out();
  out(
    `Targets, on each database: ≥ ${ACK_TARGET} acknowledged submits/s sustained over ${seconds} s (the ${ACK_TARGET}/s row: "acked/s in window"); submit → ADMITTED seen p99 ≤ ${SEEN_P99_TARGET} ms at 200/s offered.`,
  );
  out();
  const rows: string[][] = [];
  const notes: string[] = [];
  const skipped: string[] = [];
  const verdicts: string[] = [];
  const pgAdmin = process.env.BENCH_PG_URL || DEFAULT_PG_URL;
  const databases: { name: string; url?: string; drop?: () => Promise<void>; where: string }[] = [
    { name: 'SQLite', where: 'SQLite in the temp data dir' },
  ];
  const pg = await createBenchDatabase(pgAdmin);
  if ('error' in pg)
    notes.push(
      `PostgreSQL not measured: could not create a database through ${redact(pgAdmin)} (BENCH_PG_URL): ${pg.error}.`,
    );
  else
    databases.push({
      name: 'PostgreSQL',
      url: pg.url,
      drop: pg.drop,
      where: `PostgreSQL, fresh database ${redact(pg.url)} (dropped after)`,
    });
  for (const db of databases) {
    let results: RateResult[];
    try {
      results = await onServer(db.name, db.url, rates, seconds, skipped);
    } finally {
      await db.drop?.();
    }
    for (const r of results) {
      rows.push([
        db.name,
        `${r.rate}/s`,
        `${r.acked}/${r.offered}`,
        f1(r.ackedPerS),
        f1(r.admittedPerS),
        show(pct(r.answer, 0.5)),
        show(pct(r.answer, 0.99)),
        show(pct(r.serverAdmit, 0.5)),
        show(pct(r.seenAdmitted, 0.5)),
        show(pct(r.seenAdmitted, 0.99)),
        `${r.seen}/${r.offered}`,
        r.share,
        ms(r.cpuMsPerAcked),
        String(r.errors),
      ]);
      notes.push(
        `${db.name} ${r.rate}/s: ${r.offered} offered over ${seconds} s, ${r.sent} sent` +
          (r.stoppedAtS !== null
            ? ` (offering stopped at ${r.stoppedAtS.toFixed(1)} s: more than ${BACKLOG_S} s of submits unanswered)`
            : '') +
          `; ${r.acked} acknowledged and ${r.seen} seen ADMITTED within ${DRAIN_S} s of the last one being due` +
          (r.unanswered ? ` (${r.unanswered} still unanswered then)` : '') +
          (r.firstError ? `; first error: ${r.firstError.replace(/\s+/g, ' ')}` : '') +
          `; load average ${loadAvg()}.`,
      );
      if (r.rate === ACK_TARGET)
        verdicts.push(
          `${db.name}: ${f1(r.ackedPerS)} acknowledged submits/s at ${r.rate}/s offered (target ≥ ${ACK_TARGET}, counted as met from ${ACK_TARGET * 0.99} because the answers to the last submits due arrive just after the window: ${verdict(r.ackedPerS, '>=', ACK_TARGET * 0.99)}), ${ms(r.cpuMsPerAcked)} ms server CPU per acknowledged job`,
        );
      if (r.rate === 200)
        verdicts.push(
          `${db.name}: submit → ADMITTED seen p99 ${show(pct(r.seenAdmitted, 0.99))}${Number.isFinite(pct(r.seenAdmitted, 0.99)) ? ' ms' : ''} at 200/s (target ≤ ${SEEN_P99_TARGET} ms: ${verdict(pct(r.seenAdmitted, 0.99), '<=', SEEN_P99_TARGET)})`,
        );
    }
    if (rates.includes(ACK_TARGET) && !results.some((r) => r.rate === ACK_TARGET)) {
      const best = Math.max(...results.map((r) => r.ackedPerS));
      verdicts.push(
        `${db.name}: ${ACK_TARGET}/s not offered (the server fell behind at a lower rate); at most ${f1(best)} acknowledged submits/s measured (target ≥ ${ACK_TARGET}: NOT met)`,
      );
    }
    notes.push(`${db.name}: ${db.where}.`);
  }
  out(
    `Open loop: submit i of a rate is due at start + i/rate whatever happened to the earlier ones; ${seconds} s per rate (BENCH_SUBMIT_SECONDS), one aurora MEMBER over up to ${SUBMIT_SOCKETS} keep-alive connections, ` +
      'each submit with its own idempotency key. Jobs: 1 MIG slice, 30 declared s at time scale 1000 (30 ms real), into aurora-training (56 slices nominal, 112 with borrowing): ' +
      'at 1,000/s about 30 slices are busy on average, so capacity never holds a job back and what is measured is the submit and admission path. ' +
      'A fresh server per database; the rates run one after the other on it, the queue settled in between. ' +
      '"acked/s in window" and "admitted/s" count answers and ADMITTED events received inside the offered window [start, start + seconds] (a server that keeps up shows ≈ the rate). ' +
      `Latencies are from the moment each submit was due (so queueing in a server that falls behind counts), over all offered submits: one not answered / not seen admitted within ${DRAIN_S} s of the last being due counts as "> ${DRAIN_S} s"; ` +
      `offering stops once more than ${BACKLOG_S} s of submits are unanswered (the rest count as not answered). "server admit" uses the ADMITTED event's own timestamp. ` +
      "On-CPU / waiting = share of the rate's wall time the server's JS thread ran / was runnable but waited for a core (/proc/<pid>/schedstat). " +
      'CPU per job = server process CPU (all threads) from the first submit to the end of the drain / acknowledged submits (it includes admitting, starting and finishing them).',
  );
  out();
  out(
    table(
      [
        'database',
        'offered',
        'acked',
        'acked/s in window',
        'admitted/s',
        'answer p50 ms',
        'p99',
        'server admit p50',
        'ADMITTED seen p50',
        'p99',
        'seen',
        'server thread on-CPU / waiting',
        'server CPU ms per acked job',
        'errors',
      ],
      rows,
    ),
  );
  out();
  for (const v of verdicts) out(`- ${v}.`);
  for (const n of [...notes, ...skipped]) out(`- ${n}`);
  out();
}
