// Part 4: a 10,000-job burst and the API meanwhile (issue 15, "a scheduler that never stalls the
// gateway"). The same burst on two fresh servers in the same run: admission cycles in slices
// (FAIRWAY_CYCLE_SLICE_MS, the default) and in one piece (FAIRWAY_CYCLE_SLICE_MS=0). Meanwhile an
// open-loop prober sends an authenticated `{ __typename }` every PROBE_MS and times each answer
// from the moment it was due (a request that waits for a blocked event loop counts its wait).
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { post, sleep } from './load-client.js';
import { cpuSeconds, loadAvg, sched, schedShare } from './process-stats.js';
import { f0, ms, out, pct, reportServerErrors, table, verdict } from './report.js';
import { METRICS_TOKEN, startFairway, type Started } from './servers.js';
import { auroraIds, settle, type Ids } from './tenant-setup.js';

const TARGET_P99_MS = 100;
const PROBE_MS = 10;
const POLL_MS = 100;
/** Admissions are waited for at most this long from the first submit. */
const CAP_S = 180;
const SUBMIT_JOBS = `mutation SubmitJobs($jobs: [SubmitJobInput!]!) { submitJobs(jobs: $jobs) { id } }`;
const PROBE = JSON.stringify({ query: '{ __typename }' });

function scrape(server: Started): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(server.url.replace(/\/graphql$/, '/metrics'), { agent: false, headers: { authorization: `Bearer ${METRICS_TOKEN}` } }, (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () => (res.statusCode === 200 ? resolve(text) : reject(new Error(`/metrics: ${res.statusCode}`))));
      })
      .on('error', reject);
  });
}

const metric = (text: string, re: RegExp): number => Number(re.exec(text)?.[1] ?? 0);
const admittedIn = (text: string, queue: string) => metric(text, new RegExp(`^fairway_scheduler_admitted_total\\{queue="${queue}"\\} (\\S+)$`, 'm'));
/** Cycles (or slices) run so far, and how many took longer than `le` seconds (the histogram's buckets). */
function cycles(text: string): { count: number; over100ms: number; over250ms: number; sum: number } {
  const count = metric(text, /^fairway_scheduler_cycle_duration_seconds_count (\S+)$/m);
  const le = (b: string) => metric(text, new RegExp(`^fairway_scheduler_cycle_duration_seconds_bucket\\{le="${b}"\\} (\\S+)$`, 'm'));
  return { count, over100ms: count - le('0.1'), over250ms: count - le('0.25'), sum: metric(text, /^fairway_scheduler_cycle_duration_seconds_sum (\S+)$/m) };
}

const jobInput = (ids: Ids, key: string) => ({ queueId: ids.queueId, projectId: ids.projectId, name: key, idempotencyKey: key, podSets: [{ gpusPerPod: 1, flavors: ['a100-1g.10gb'] }], expectedDurationSeconds: 1 });

interface BurstRun {
  mode: string;
  jobs: number;
  accepted: number;
  submitS: number;
  admitted: number;
  admitS: number;
  probes: number[];
  probesAfterSubmit: number[];
  probeErrors: number;
  cpuS: number;
  share: string;
  slices: { count: number; over100ms: number; over250ms: number; sum: number };
  errors: number;
  firstError: string | null;
}

async function burstRun(server: Started, ids: Ids, token: string, mode: string, jobs: number, batch: number, callers: number): Promise<BurstRun> {
  const target = new URL(server.url);
  const before = await scrape(server);
  const base = admittedIn(before, ids.queueName);
  const cycles0 = cycles(before);
  const cpu0 = cpuSeconds(server.pid);
  const sched0 = sched(server.pid);
  const start = performance.now();
  // The prober: one request due every PROBE_MS whatever happened to the earlier ones.
  const probeAgent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const probes: { due: number; ms: number }[] = [];
  let probeErrors = 0;
  let probing = true;
  const inFlight = new Set<Promise<void>>();
  const prober = (async () => {
    for (let i = 0; probing; i++) {
      const due = start + i * PROBE_MS;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const p = post(probeAgent, target, token, PROBE).then(
        (res) => {
          if (res.status === 200 && res.text.includes('"__typename"')) probes.push({ due, ms: performance.now() - due });
          else probeErrors++;
        },
        () => void probeErrors++,
      );
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    }
  })();
  // Admissions, from the server's counter.
  let admitted = 0;
  let admittedAt = start;
  let polling = true;
  const poller = (async () => {
    while (polling) {
      try {
        const n = admittedIn(await scrape(server), ids.queueName) - base;
        if (n > admitted) [admitted, admittedAt] = [n, performance.now()];
      } catch {
        // counted as no progress
      }
      await sleep(POLL_MS);
    }
  })();
  // The burst: `jobs` jobs in calls of `batch`, `callers` calls in flight.
  const calls = Math.ceil(jobs / batch);
  const agent = new http.Agent({ keepAlive: false, maxSockets: callers });
  let next = 0;
  let accepted = 0;
  let errors = 0;
  let firstError: string | null = null;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      for (;;) {
        const c = next++;
        if (c >= calls) return;
        const size = Math.min(batch, jobs - c * batch);
        const body = JSON.stringify({ query: SUBMIT_JOBS, variables: { jobs: Array.from({ length: size }, (_, j) => jobInput(ids, `${mode}-${c}-${j}`)) } });
        try {
          const res = await post(agent, target, token, body);
          const got = (JSON.parse(res.text) as { data?: { submitJobs?: unknown[] } }).data?.submitJobs;
          if (got?.length === size) accepted += size;
          else {
            errors++;
            firstError ??= `${res.status} ${res.text.slice(0, 200)}`;
          }
        } catch (error) {
          errors++;
          firstError ??= error instanceof Error ? error.message : String(error);
        }
      }
    }),
  );
  const submittedAt = performance.now();
  agent.destroy();
  while (admitted < accepted && performance.now() - start < CAP_S * 1000) await sleep(POLL_MS);
  probing = false;
  polling = false;
  await prober;
  await poller;
  await Promise.race([Promise.all(inFlight), sleep(10_000)]);
  probeAgent.destroy();
  const cpuS = cpuSeconds(server.pid) - cpu0;
  const share = schedShare(sched0, sched(server.pid), performance.now() - start);
  const c1 = cycles(await scrape(server));
  const sorted = (xs: number[]) => xs.sort((a, b) => a - b);
  return {
    mode,
    jobs,
    accepted,
    submitS: (submittedAt - start) / 1000,
    admitted,
    admitS: (admittedAt - start) / 1000,
    probes: sorted(probes.filter((p) => p.due <= admittedAt).map((p) => p.ms)),
    probesAfterSubmit: sorted(probes.filter((p) => p.due > submittedAt && p.due <= admittedAt).map((p) => p.ms)),
    probeErrors,
    cpuS,
    share,
    slices: { count: c1.count - cycles0.count, over100ms: c1.over100ms - cycles0.over100ms, over250ms: c1.over250ms - cycles0.over250ms, sum: c1.sum - cycles0.sum },
    errors,
    firstError,
  };
}

/** Starts Fairway with FAIRWAY_CYCLE_SLICE_MS set (startFairway passes this process's environment on). */
async function startWithSlice(sliceMs: string): Promise<Started> {
  const previous = process.env.FAIRWAY_CYCLE_SLICE_MS;
  process.env.FAIRWAY_CYCLE_SLICE_MS = sliceMs;
  try {
    return await startFairway(1000);
  } finally {
    if (previous === undefined) delete process.env.FAIRWAY_CYCLE_SLICE_MS;
    else process.env.FAIRWAY_CYCLE_SLICE_MS = previous;
  }
}

export async function burstStall(): Promise<void> {
  const jobs = Number(process.env.BENCH_BURST_JOBS ?? 10_000);
  const batch = Number(process.env.BENCH_BURST_BATCH ?? 200);
  const callers = Number(process.env.BENCH_BURST_CALLERS ?? 2);
  const sliceMs = process.env.BENCH_BURST_SLICE_MS ?? '20';
  out(`## 4. A ${f0(jobs)}-job burst: the API meanwhile, admission cycles in slices vs in one piece`);
  out();
  out(`Target (issue 15): during a 10,000-job burst, p99 of a simple authenticated query < ${TARGET_P99_MS} ms; the burst's total admission time not worse than with unsliced cycles (measured in the same run).`);
  out();
  const runs: BurstRun[] = [];
  for (const [mode, slice] of [
    [`sliced (FAIRWAY_CYCLE_SLICE_MS=${sliceMs})`, sliceMs],
    ['one piece (FAIRWAY_CYCLE_SLICE_MS=0)', '0'],
  ] as const) {
    const server = await startWithSlice(slice);
    try {
      const ids = await auroraIds(server);
      const member = server.tokens['aurora-research/MEMBER']!;
      await settle(server, ids, server.tokens['aurora-research/TENANT_ADMIN']!, 10_000);
      // Warm both paths (JIT) with a small burst that is not measured.
      await burstRun(server, ids, member, `warm${slice}`, 400, batch, callers);
      await settle(server, ids, server.tokens['aurora-research/TENANT_ADMIN']!, 20_000);
      const r = await burstRun(server, ids, member, `burst${slice}`, jobs, batch, callers);
      r.mode = mode;
      runs.push(r);
      console.log(`  ${mode}: probe p99 ${ms(pct(r.probes, 0.99))} ms, all admitted after ${r.admitS.toFixed(1)} s (${r.admitted}/${r.accepted})`);
    } finally {
      reportServerErrors(server);
      await server.stop();
    }
  }
  out(
    `${f0(jobs)} jobs (1 MIG slice each, 1 declared s at time scale 1000 = 1 ms real, into aurora-training: 56 slices nominal, 112 with borrowing, so most of the burst waits and is admitted as capacity turns over) ` +
      `sent through \`submitJobs\` in calls of ${batch} (BENCH_BURST_BATCH) by ${callers} callers at once (BENCH_BURST_CALLERS), as fast as answered, by one aurora MEMBER; a fresh server per mode, each warmed by an unmeasured 400-job burst. ` +
      `Meanwhile \`{ __typename }\` with the same MEMBER's API token (verified on every request) is sent every ${PROBE_MS} ms, open loop over keep-alive connections: latency from the moment each was due, over the probes due from the first submit until the last admission. ` +
      `"all admitted after" = from the first submit until the server's \`fairway_scheduler_admitted_total{queue}\` had grown by every accepted job (polled every ${POLL_MS} ms). ` +
      'Slices = leader cycle turns in the window (`fairway_scheduler_cycle_duration_seconds`: one observation per slice, write included). CPU = server process CPU over the window.',
  );
  out();
  out(
    table(
      ['mode', 'accepted', 'submits answered s', 'admitted', 'all admitted after s', 'probes', 'probe p50 ms', 'p99 ms', 'max ms', 'p99 after the last submit ms', 'slices', 'slices > 100 ms', '> 250 ms', 'server CPU s', 'server thread on-CPU / waiting', 'errors'],
      runs.map((r) => [
        r.mode,
        f0(r.accepted),
        r.submitS.toFixed(1),
        `${f0(r.admitted)}/${f0(r.accepted)}`,
        r.admitted < r.accepted ? `> ${CAP_S} (not all)` : r.admitS.toFixed(1),
        f0(r.probes.length),
        ms(pct(r.probes, 0.5)),
        ms(pct(r.probes, 0.99)),
        ms(r.probes[r.probes.length - 1] ?? NaN),
        ms(pct(r.probesAfterSubmit, 0.99)),
        f0(r.slices.count),
        f0(r.slices.over100ms),
        f0(r.slices.over250ms),
        r.cpuS.toFixed(1),
        r.share,
        String(r.errors + r.probeErrors),
      ]),
    ),
  );
  out();
  const [sliced, whole] = runs;
  if (sliced && whole) {
    const p99 = pct(sliced.probes, 0.99);
    out(`- Sliced: probe p99 ${ms(p99)} ms during the burst (target < ${TARGET_P99_MS} ms: ${verdict(p99, '<=', TARGET_P99_MS - 1e-9)}); in one piece: ${ms(pct(whole.probes, 0.99))} ms.`);
    const done = sliced.admitted >= sliced.accepted && whole.admitted >= whole.accepted;
    out(`- Total admission time: sliced ${sliced.admitS.toFixed(1)} s, one piece ${whole.admitS.toFixed(1)} s (target: not worse: ${done ? verdict(sliced.admitS, '<=', whole.admitS) : 'not measured (not all admitted)'}).`);
  }
  for (const r of runs) if (r.firstError) out(`- ${r.mode}: first error: ${r.firstError.replace(/\s+/g, ' ')}.`);
  out(`- Load average after: ${loadAvg()}.`);
  out();
}
