// Part 4: a 10,000-job burst and the API meanwhile ("a scheduler that never stalls the
// gateway"). The same burst on two fresh servers in the same run: admission cycles in slices
// (FAIRWAY_CYCLE_SLICE_MS, the default) and in one piece (FAIRWAY_CYCLE_SLICE_MS=0). Meanwhile an
// open-loop prober sends an authenticated `{ __typename }` every PROBE_MS and times each answer
// from the moment it was due (a request that waits for a blocked event loop counts its wait).
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { admittedIn, cycles, scrape } from './burst-metrics.js';
import { gql, post, sleep } from './load-client.js';
import { cpuSeconds, loadAvg, sched, schedShare } from './process-stats.js';
import { f0, ms, out, pct, reportServerErrors, table, verdict } from './report.js';
import { type Started, startFairway } from './servers.js';
import { auroraIds, type Ids, postSubmitJobs, SUBMIT_JOBS, settle } from './tenant-setup.js';

const TARGET_P99_MS = 100;
const PROBE_MS = 20;
const POLL_MS = 100;
/** The leader is waited for at most this long after the last submit is answered. */
const CAP_S = 120;
/** The leader counts as idle once no cycle has run for this long. */
const IDLE_MS = 2000;
const PROBE = JSON.stringify({ query: '{ __typename }' });
/** The quota change: aurora-training's MIG nominal, 56 before. */
const NEW_MIG_NOMINAL = 64;

// Long jobs (nothing finishes during the run): what fits is admitted, the rest waits with a reason.
// One in ten is a production job (it may preempt training jobs of its queue).
const jobInput = (ids: Ids, key: string, i: number, seconds = 1e6) => ({
  queueId: ids.queueId,
  projectId: ids.projectId,
  name: key,
  idempotencyKey: key,
  priorityClass: i % 10 === 0 ? 'production' : 'training',
  podSets: [{ gpusPerPod: 1 + (i % 3), flavors: i % 2 === 0 ? ['a100-1g.10gb'] : ['h100-80g'] }],
  expectedDurationSeconds: seconds,
});

interface BurstRun {
  mode: string;
  jobs: number;
  accepted: number;
  submitS: number;
  admitted: number;
  admitS: number;
  /** From the first submit until the leader's last cycle (NaN: still busy at the cap). */
  busyS: number;
  /** A trigger's run: from the trigger until the server's queue usage shows the change (NaN: not seen). */
  takenS: number;
  probes: number[];
  probesAfterSubmit: number[];
  probeErrors: number;
  cpuS: number;
  share: string;
  slices: { count: number; over100ms: number; over250ms: number; sum: number };
  errors: number;
  firstError: string | null;
}

async function burstRun(
  server: Started,
  ids: Ids,
  token: string,
  mode: string,
  jobs: number,
  batch: number,
  callers: number,
  seconds = 1e6,
  trigger?: { run: () => Promise<void>; taken?: () => Promise<boolean> },
): Promise<BurstRun> {
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
          if (res.status === 200 && res.text.includes('"__typename"'))
            probes.push({ due, ms: performance.now() - due });
          else probeErrors++;
        },
        () => void probeErrors++,
      );
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    }
  })();
  // Admissions and cycles, from the server's counters.
  let admitted = 0;
  let admittedAt = start;
  let cycleCount = cycles0.count;
  let cycleAt = start;
  // When the last scrape that answered was sent: the leader counts as idle only once a scrape sent
  // IDLE_MS after its last cycle has answered (a server too busy to answer is not idle).
  let answeredSentAt = start;
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const sentAt = performance.now();
      try {
        const text = await scrape(server);
        const n = admittedIn(text, ids.queueName) - base;
        if (n > admitted) [admitted, admittedAt] = [n, performance.now()];
        const c = cycles(text).count;
        if (c !== cycleCount) [cycleCount, cycleAt] = [c, performance.now()];
        answeredSentAt = sentAt;
      } catch {
        // counted as no progress
      }
      await sleep(POLL_MS);
    }
  })();
  // The burst: `jobs` jobs in calls of `batch`, `callers` calls in flight.
  // Or, instead of a burst, one event that sets the leader to work (a quota change).
  let takenAt = Number.NaN;
  if (trigger) {
    await trigger.run();
    const taken = trigger.taken;
    // Until the server answers with the change in the queue's live usage (the scheduler core's view).
    while (taken && performance.now() - start < CAP_S * 1000) {
      if (await taken().catch(() => false)) {
        takenAt = performance.now();
        break;
      }
      await sleep(POLL_MS / 5);
    }
  }
  const calls = trigger ? 0 : Math.ceil(jobs / batch);
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
        const body = JSON.stringify({
          query: SUBMIT_JOBS,
          variables: {
            jobs: Array.from({ length: size }, (_, j) =>
              jobInput(ids, `${mode}-${c}-${j}`, c * batch + j, seconds),
            ),
          },
        });
        const failed = await postSubmitJobs(agent, target, token, body, size);
        if (failed === null) accepted += size;
        else {
          errors++;
          firstError ??= failed;
        }
      }
    }),
  );
  const submittedAt = performance.now();
  agent.destroy();
  // Done when the leader has been idle for IDLE_MS (every job evaluated: admitted, or waiting with a reason),
  // as a scrape sent that long after its last cycle (and after the change was taken) tells.
  const busySince = () => Math.max(cycleAt, submittedAt, Number.isNaN(takenAt) ? 0 : takenAt);
  while (answeredSentAt - busySince() < IDLE_MS && performance.now() - submittedAt < CAP_S * 1000)
    await sleep(POLL_MS);
  const idle = answeredSentAt - busySince() >= IDLE_MS;
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
    busyS: idle ? (cycleAt - start) / 1000 : NaN,
    takenS: (takenAt - start) / 1000,
    probes: sorted(probes.filter((p) => p.due <= busySince()).map((p) => p.ms)),
    probesAfterSubmit: sorted(probes.filter((p) => p.due > submittedAt && p.due <= cycleAt).map((p) => p.ms)),
    probeErrors,
    cpuS,
    share,
    slices: {
      count: c1.count - cycles0.count,
      over100ms: c1.over100ms - cycles0.over100ms,
      over250ms: c1.over250ms - cycles0.over250ms,
      sum: c1.sum - cycles0.sum,
    },
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
  out(
    `Target: during a 10,000-job burst, p99 of a simple authenticated query < ${TARGET_P99_MS} ms; the burst's total admission time not worse than with unsliced cycles (measured in the same run).`,
  );
  out();
  const runs: BurstRun[] = [];
  const quotaRuns: BurstRun[] = [];
  const rebuildRuns: BurstRun[] = [];
  for (const [mode, slice] of [
    [`sliced (FAIRWAY_CYCLE_SLICE_MS=${sliceMs})`, sliceMs],
    ['one piece (FAIRWAY_CYCLE_SLICE_MS=0)', '0'],
  ] as const) {
    const server = await startWithSlice(slice);
    try {
      const ids = await auroraIds(server);
      const member = server.tokens['aurora-research/MEMBER']!;
      await settle(server, ids, server.tokens['aurora-research/TENANT_ADMIN']!, 10_000);
      // Warm both paths (JIT) with a small burst of short jobs that is not measured.
      await burstRun(server, ids, member, `warm${slice}`, 400, batch, callers, 1);
      await settle(server, ids, server.tokens['aurora-research/TENANT_ADMIN']!, 20_000);
      const r = await burstRun(server, ids, member, `burst${slice}`, jobs, batch, callers);
      r.mode = mode;
      runs.push(r);
      // With the burst pending, a platform admin sets a quota: the leader rebuilds and re-evaluates every
      // pending job in one cycle.
      const admin = server.tokens['platform/PLATFORM_ADMIN']!;
      const tenantAdmin = server.tokens['aurora-research/TENANT_ADMIN']!;
      const q = await burstRun(server, ids, member, `quota${slice}`, 0, batch, callers, 1e6, {
        run: async () => {
          await gql(
            server,
            admin,
            `mutation($q: ID!, $in: QuotaInput!) { setQuota(queueId: $q, quota: $in) { id } }`,
            { q: ids.queueId, in: { flavor: 'a100-1g.10gb', nominal: NEW_MIG_NOMINAL } },
          );
        },
        taken: async () => {
          const data = await gql<{
            node: { usage: { flavor: string; resource: string; nominal: number }[] };
          }>(
            server,
            tenantAdmin,
            'query($id: ID!) { node(id: $id) { ... on Queue { usage { flavor resource nominal } } } }',
            { id: ids.queueId },
          );
          return data.node.usage.some(
            (u) =>
              u.flavor === 'a100-1g.10gb' &&
              u.resource.toLowerCase() === 'gpu' &&
              u.nominal === NEW_MIG_NOMINAL,
          );
        },
      });
      q.mode = `${mode}: quota change`;
      quotaRuns.push(q);
      // Then a change the core cannot take in place: a new flavor, so the leader builds its core anew from the
      // database with the burst still pending (its jobs read in pages, the event loop answering between them).
      const f = await burstRun(server, ids, member, `flavor${slice}`, 0, batch, callers, 1e6, {
        run: async () => {
          await gql(server, admin, 'mutation($in: CreateFlavorInput!) { createFlavor(input: $in) { id } }', {
            in: { name: `bench-new-${slice}`, kind: 'GPU', gpuModel: 'L40S', pricePerUnitHour: 1 },
          });
        },
      });
      f.mode = `${mode}: new flavor (rebuild)`;
      rebuildRuns.push(f);
      console.log(
        `  ${mode}: probe p99 ${ms(pct(r.probes, 0.99))} ms, last admission after ${r.admitS.toFixed(1)} s (${r.admitted}/${r.accepted}), leader idle after ${r.busyS.toFixed(1)} s`,
      );
    } finally {
      reportServerErrors(server);
      await server.stop();
    }
  }
  out(
    `${f0(jobs)} jobs into aurora-training (alternately 1–3 MIG slices and 1–3 H100 GPUs; one in ten of priority production, the rest training; 10^6 declared s, so none finishes during the run: ` +
      'what fits is admitted, production jobs may preempt training ones, the rest waits with a reason) ' +
      `sent through \`submitJobs\` in calls of ${batch} (BENCH_BURST_BATCH) by ${callers} callers at once (BENCH_BURST_CALLERS), each sending its next call when answered, by one aurora MEMBER; a fresh server per mode, each warmed by an unmeasured 400-job burst. ` +
      `Meanwhile \`{ __typename }\` with the same MEMBER's API token (verified on every request) is sent every ${PROBE_MS} ms, open loop over keep-alive connections: latency from the moment each was due, over the probes due from the first submit until the leader's last cycle of the burst. ` +
      `"last admission" = from the first submit until the server's \`fairway_scheduler_admitted_total{queue}\` last grew (polled every ${POLL_MS} ms); "leader idle" = until its last cycle (no cycle for ${IDLE_MS / 1000} s after it: every job admitted or waiting with a reason). ` +
      `Then, with the burst pending, a platform admin sets aurora-training's MIG quota (\`setQuota\`, nominal 56 → ${NEW_MIG_NOMINAL}): the leader's core takes the change and re-evaluates every pending job ("quota change" rows: the window runs from the mutation until the leader's last cycle; "change taken" = from the mutation until the queue's \`usage { nominal }\`, read from the core by an aurora TENANT_ADMIN every ${POLL_MS / 5} ms, shows it; "admitted" = admissions after it; "leader idle" needs a /metrics scrape sent ${IDLE_MS / 1000} s after the last cycle to answer, so a server too busy to answer is never counted idle). Then a platform admin creates a flavor ("new flavor (rebuild)" rows): a change the core cannot take in place, so the leader builds its core anew from the database with the burst still pending. ` +
      'Slices = leader cycle turns in the window (`fairway_scheduler_cycle_duration_seconds`: one observation per slice or unsliced cycle, its write included). CPU = server process CPU over the window.',
  );
  out();
  out(
    table(
      [
        'mode',
        'accepted',
        'submits answered s',
        'admitted',
        'last admission s',
        'leader idle s',
        'change taken s',
        'probes',
        'probe p50 ms',
        'p99 ms',
        'max ms',
        'p99 after the last submit ms',
        'slices',
        'slices > 100 ms',
        '> 250 ms',
        'server CPU s',
        'server thread on-CPU / waiting',
        'errors',
      ],
      [...runs, ...quotaRuns, ...rebuildRuns].map((r) => [
        r.mode,
        f0(r.accepted),
        r.submitS.toFixed(1),
        f0(r.admitted),
        r.admitS.toFixed(1),
        Number.isFinite(r.busyS) ? r.busyS.toFixed(1) : `> ${CAP_S} after the submits`,
        Number.isFinite(r.takenS) ? r.takenS.toFixed(2) : '—',
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
    out(
      `- Sliced: probe p99 ${ms(p99)} ms during the burst (target < ${TARGET_P99_MS} ms: ${verdict(p99, '<=', TARGET_P99_MS - 1e-9)}); in one piece: ${ms(pct(whole.probes, 0.99))} ms.`,
    );
    out(
      `- Total admission time (last admission): sliced ${sliced.admitS.toFixed(1)} s (${f0(sliced.admitted)} admitted), one piece ${whole.admitS.toFixed(1)} s (${f0(whole.admitted)}) (target: not worse: ${verdict(sliced.admitS, '<=', whole.admitS)}); leader idle after ${sliced.busyS.toFixed(1)} s vs ${whole.busyS.toFixed(1)} s.`,
    );
  }
  const [qs, qw] = quotaRuns;
  if (qs && qw)
    out(
      `- Quota change with the burst pending: probe p99 ${ms(pct(qs.probes, 0.99))} ms sliced (target < ${TARGET_P99_MS} ms: ${verdict(pct(qs.probes, 0.99), '<=', TARGET_P99_MS - 1e-9)}), ${ms(pct(qw.probes, 0.99))} ms in one piece; the change taken by the leader's core after ${qs.takenS.toFixed(2)} s vs ${qw.takenS.toFixed(2)} s; leader idle after ${qs.busyS.toFixed(1)} s vs ${qw.busyS.toFixed(1)} s; admitted after it ${f0(qs.admitted)} vs ${f0(qw.admitted)}.`,
    );
  const [rs, rw] = rebuildRuns;
  if (rs && rw)
    out(
      `- A new flavor with the burst pending (a rebuild from the database): probe p99 ${ms(pct(rs.probes, 0.99))} ms sliced (target < ${TARGET_P99_MS} ms: ${verdict(pct(rs.probes, 0.99), '<=', TARGET_P99_MS - 1e-9)}), ${ms(pct(rw.probes, 0.99))} ms in one piece; leader idle after ${rs.busyS.toFixed(1)} s vs ${rw.busyS.toFixed(1)} s.`,
    );
  for (const r of runs)
    if (r.firstError) out(`- ${r.mode}: first error: ${r.firstError.replace(/\s+/g, ' ')}.`);
  out(`- Load average after: ${loadAvg()}.`);
  out();
}
