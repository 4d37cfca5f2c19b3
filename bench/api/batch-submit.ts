// Part 2b: batch submit through `submitJobs(jobs: [SubmitJobInput!]!): [Job!]!` (≤ 1,000 jobs per
// call, all-or-nothing, one idempotency key per job) on SQLite: jobs/s accepted (answers
// received) and jobs/s admitted (until the last one is admitted), one caller sending calls one
// after the other and several callers at once. Admissions are counted from the server's own
// `fairway_scheduler_admitted_total` counter on /metrics, polled every POLL_MS.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { gql, post, sleep } from './load-client.js';
import { cpuSeconds, loadAvg, sched, schedShare } from './process-stats.js';
import { f0, ms, out, pct, reportServerErrors, table, verdict } from './report.js';
import { METRICS_TOKEN, type Started, startFairway } from './servers.js';
import { auroraIds, type Ids, postSubmitJobs, SUBMIT_JOBS, settle } from './tenant-setup.js';

const TARGET = 5000; // jobs/s, accepted and admitted
const POLL_MS = 100;
/** A run stops sending calls after this long (a slow server would otherwise take minutes for 20,000 jobs). */
const CAP_S = 30;
/** After the last answer, how long admissions are still waited for. */
const ADMIT_WAIT_S = 10;

function get(url: string, token: string): Promise<string> {
  return new Promise((resolve, reject) => {
    // A new connection per scrape: a keep-alive socket the server closes as idle just as the
    // next scrape is written reads ECONNRESET (more likely while its event loop is blocked).
    http
      .get(url, { agent: false, headers: { authorization: `Bearer ${token}` } }, (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(text)
            : reject(new Error(`${url}: ${res.statusCode} ${text.slice(0, 200)}`)),
        );
      })
      .on('error', reject);
  });
}

/** Jobs the leader has admitted into `queue` since start (Prometheus counter). */
export async function admittedTotal(server: Started, queue: string): Promise<number> {
  const text = await get(server.url.replace(/\/graphql$/, '/metrics'), METRICS_TOKEN);
  const m = new RegExp(`^fairway_scheduler_admitted_total\\{queue="${queue}"\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

const jobInput = (ids: Ids, key: string) => ({
  queueId: ids.queueId,
  projectId: ids.projectId,
  name: key,
  idempotencyKey: key,
  podSets: [{ gpusPerPod: 1, flavors: ['a100-1g.10gb'] }],
  expectedDurationSeconds: 1,
});

interface BatchRun {
  label: string;
  callers: number;
  callsDone: number;
  callsPlanned: number;
  jobs: number;
  acceptedPerS: number;
  admittedPerS: number;
  admitted: number;
  callMs: number[];
  cpuMsPer1000: number;
  share: string;
  errors: number;
  firstError: string | null;
  capped: boolean;
  /** The queue's pendingCount when the run ended (cross-check of the counter: accepted − admitted ≈
   * pending).
   */
  pendingAfter: number;
}

async function batchRun(
  server: Started,
  ids: Ids,
  token: string,
  label: string,
  callers: number,
  calls: number,
  size: number,
): Promise<BatchRun> {
  // One connection per call (≥ 100 ms of work each, so the connect is noise): no keep-alive race.
  const agent = new http.Agent({ keepAlive: false, maxSockets: callers });
  const target = new URL(server.url);
  const base = await admittedTotal(server, ids.queueName);
  const callMs: number[] = [];
  let next = 0;
  let accepted = 0;
  let errors = 0;
  let firstError: string | null = null;
  let capped = false;
  const cpu0 = cpuSeconds(server.pid);
  const sched0 = sched(server.pid);
  const start = performance.now();
  // Admissions polled from the start, so the last one is seen within POLL_MS of happening.
  let admitted = 0;
  let admittedAt = start;
  let polling = true;
  let pollErrors = 0;
  const poller = (async () => {
    while (polling) {
      try {
        const n = (await admittedTotal(server, ids.queueName)) - base;
        if (n > admitted) [admitted, admittedAt] = [n, performance.now()];
      } catch (error) {
        if (pollErrors++ === 0)
          console.error(`  /metrics poll failed: ${error instanceof Error ? error.message : String(error)}`);
      }
      await sleep(POLL_MS);
    }
  })();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      for (;;) {
        const c = next++;
        if (c >= calls) return;
        if (performance.now() - start > CAP_S * 1000) {
          capped = true;
          return;
        }
        const body = JSON.stringify({
          query: SUBMIT_JOBS,
          variables: { jobs: Array.from({ length: size }, (_, j) => jobInput(ids, `${label}-${c}-${j}`)) },
        });
        const t0 = performance.now();
        const failed = await postSubmitJobs(agent, target, token, body, size);
        if (failed === null) accepted += size;
        else {
          errors++;
          firstError ??= failed;
        }
        callMs.push(performance.now() - t0);
      }
    }),
  );
  const acceptedAt = performance.now();
  while (admitted < accepted && performance.now() - acceptedAt < ADMIT_WAIT_S * 1000) await sleep(POLL_MS);
  polling = false;
  await poller;
  const q = await gql(server, token, `query($id: ID!) { node(id: $id) { ... on Queue { pendingCount } } }`, {
    id: ids.queueId,
  }).catch(() => null);
  const cpu = cpuSeconds(server.pid) - cpu0;
  const share = schedShare(sched0, sched(server.pid), performance.now() - start);
  agent.destroy();
  return {
    label,
    callers,
    callsDone: callMs.length,
    callsPlanned: calls,
    jobs: accepted,
    acceptedPerS: accepted / ((acceptedAt - start) / 1000),
    // All admitted: the run's rate. Not all: the rate so far (the last increase seen), flagged in the table.
    admittedPerS: admitted > 0 ? admitted / ((admittedAt - start) / 1000) : NaN,
    admitted,
    callMs: callMs.sort((a, b) => a - b),
    cpuMsPer1000: (1e6 * cpu) / Math.max(1, accepted),
    share,
    errors,
    firstError,
    capped,
    pendingAfter: q?.node?.pendingCount ?? NaN,
  };
}

export async function batchSubmit(): Promise<void> {
  out('## 2b. Batch submit (`submitJobs`, 1,000 jobs per call) on SQLite');
  out();
  out(
    `Target: ≥ ${f0(TARGET)} jobs/s accepted and ≥ ${f0(TARGET)} jobs/s admitted through \`submitJobs\` on SQLite.`,
  );
  out();
  const calls = Number(process.env.BENCH_BATCH_CALLS ?? 20);
  const size = Number(process.env.BENCH_BATCH_SIZE ?? 1000);
  const server = await startFairway(1000);
  try {
    const ids = await auroraIds(server);
    const member = server.tokens['aurora-research/MEMBER']!;
    const admin = server.tokens['aurora-research/TENANT_ADMIN']!;
    // Does the server have the mutation? A one-job call answers, or says why not.
    const probe = await post(
      new http.Agent(),
      new URL(server.url),
      member,
      JSON.stringify({ query: SUBMIT_JOBS, variables: { jobs: [jobInput(ids, 'probe')] } }),
    );
    const probeBody = JSON.parse(probe.text) as {
      data?: { submitJobs?: unknown[] };
      errors?: { message: string }[];
    };
    if (!probeBody.data?.submitJobs) {
      const missing = probeBody.errors?.some((e) => /Cannot query field "submitJobs"/.test(e.message));
      out(
        missing
          ? '**submitJobs not available** on this server (the schema has no such mutation): not measured.'
          : `**submitJobs failed** on a one-job probe (${probe.status}): ${probe.text.slice(0, 300)} — not measured.`,
      );
      out();
      return;
    }
    await settle(server, ids, admin, 10_000);
    // What the admission probe costs the server: 20 scrapes of /metrics back to back.
    const c0 = cpuSeconds(server.pid);
    for (let i = 0; i < 20; i++) await admittedTotal(server, ids.queueName);
    const scrapeMs = ((cpuSeconds(server.pid) - c0) * 1000) / 20;
    const runs: BatchRun[] = [];
    const skipped: string[] = [];
    for (const callers of [1, 4]) {
      const left = runs.length ? await settle(server, ids, admin, 20_000) : { pending: 0 };
      if (left.pending !== 0) {
        // The next run's admissions would be the previous run's backlog: its figures would mean nothing.
        skipped.push(
          `${callers} callers not run: ${left.pending < 0 ? 'the server did not answer a queue query within 20 s of the previous run' : `${f0(left.pending)} jobs of the previous run were still pending 20 s after it`}.`,
        );
        continue;
      }
      const r = await batchRun(server, ids, member, `b${callers}`, callers, calls, size);
      runs.push(r);
      console.log(
        `  ${callers} caller(s): ${f0(r.acceptedPerS)} jobs/s accepted, ${f0(r.admittedPerS)} admitted/s (${r.admitted}/${r.jobs})`,
      );
    }
    out(
      `${calls} calls of ${size} jobs each (BENCH_BATCH_CALLS, BENCH_BATCH_SIZE), every job with its own idempotency key, by one aurora MEMBER: sent one after the other by 1 caller, then by 4 callers at once (each sends its next call when its previous is answered). ` +
        'Jobs: 1 MIG slice, 1 declared s at time scale 1000 = 1 ms real, into aurora-training (56 slices nominal, 112 with borrowing): at 5,000 jobs/s about 5 slices are busy on average, ' +
        'so the queue never waits for capacity and what is measured is accepting and admitting (each job still starts and finishes in the simulated cluster, on the same server). ' +
        '"accepted/s" = jobs in answered calls / time from the first call to the last answer; "admitted/s" = the same jobs / time from the first call until the server\'s ' +
        `\`fairway_scheduler_admitted_total{queue}\` counter (GET /metrics with a metrics token, no identity lookup) had grown by all of them — polled every ${POLL_MS} ms, ` +
        `chosen over a \`tenantEvents\` subscriber (the server would build and send one WebSocket message per job, work a real caller of a batch need not ask for) and over polling job states (a list query per poll). ` +
        `One scrape costs the server ${ms(scrapeMs)} ms CPU (measured: 20 scrapes back to back), i.e. ${((scrapeMs * (1000 / POLL_MS)) / 10).toFixed(1)}% of a core at ${1000 / POLL_MS} scrapes/s; the admitted time is late by up to ${POLL_MS} ms. ` +
        `A run stops sending after ${CAP_S} s; admissions are waited for up to ${ADMIT_WAIT_S} s after the last answer. CPU per 1,000 jobs = server CPU from the first call until all were admitted (or the wait ended) / accepted jobs × 1,000, scrapes included.`,
    );
    out();
    out(
      table(
        [
          'callers',
          'calls answered',
          'jobs accepted',
          'accepted jobs/s',
          'admitted (counter)',
          'admitted jobs/s',
          'call p50 ms',
          'call p99 ms',
          'server CPU ms per 1,000 jobs',
          'server thread on-CPU / waiting',
          'errors',
        ],
        runs.map((r) => [
          String(r.callers),
          `${r.callsDone}/${r.callsPlanned}${r.capped ? ` (stopped at ${CAP_S} s)` : ''}`,
          f0(r.jobs),
          f0(r.acceptedPerS),
          `${f0(r.admitted)}/${f0(r.jobs)} (${f0(r.pendingAfter)} pending after)`,
          `${f0(r.admittedPerS)}${r.admitted < r.jobs ? ' (not all)' : ''}`,
          ms(pct(r.callMs, 0.5)),
          ms(pct(r.callMs, 0.99)),
          f0(r.cpuMsPer1000),
          r.share,
          String(r.errors),
        ]),
      ),
    );
    out();
    for (const r of runs) {
      out(
        `- ${r.callers} caller(s): ${f0(r.acceptedPerS)} jobs/s accepted (target ≥ ${f0(TARGET)}: ${verdict(r.acceptedPerS, '>=', TARGET)}), ${f0(r.admittedPerS)} jobs/s admitted (${r.admitted < r.jobs ? 'NOT met' : verdict(r.admittedPerS, '>=', TARGET)}${r.admitted < r.jobs ? `: only ${f0(r.admitted)} of ${f0(r.jobs)} admitted within ${ADMIT_WAIT_S} s of the last answer` : ''})${r.firstError ? `; first error: ${r.firstError.replace(/\s+/g, ' ')}` : ''}.`,
      );
    }
    for (const n of skipped) out(`- ${n}`);
    out(`- Load average after: ${loadAvg()}.`);
    out();
  } finally {
    reportServerErrors(server);
    await server.stop();
  }
}
