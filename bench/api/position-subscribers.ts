// Part 3: N graphql-ws subscribers, each watching one pending job's `jobPosition(id)`, while one
// running job is cancelled so the queue head is admitted and every position moves; delivery
// latency and server memory per subscriber. Sizes that would not fit the time budget are skipped.
import { performance } from 'node:perf_hooks';
import type { Client } from 'graphql-ws';
import { type FdLimit, openFiles, openFilesLimit } from './fd-limits.js';
import { gql, sleep, wsClient } from './load-client.js';
import { cpuSeconds, rssKiB } from './process-stats.js';
import { f0, f1, ms, out, pct, reportServerErrors, table, verdict } from './report.js';
import { type SeedJob, startFairway } from './servers.js';
import { auroraIds, settle } from './tenant-setup.js';

interface SubscriberRound {
  n: number;
  seconds: { submit: number; subscribe: number };
  rssBefore: number;
  rssAfter: number;
  received: number;
  fromTrigger: number[];
  fromAdmit: number[];
  admitted: number;
  waitedMs: number;
  sockets: number;
  failed: string[];
  live: number;
  cpu: { subscribe: number; delivery: number };
  serverFd: FdLimit;
}

async function subscriberRound(n: number, budgetMs: number): Promise<SubscriberRound> {
  // 32 H100s in the cohort: the first 32 one-GPU jobs are admitted (aurora borrows borealis's
  // idle half), the other n wait in one queue. Seeded in the database before start.
  const t0 = performance.now();
  const seed: SeedJob[] = Array.from({ length: n + 32 }, (_, i) => ({
    name: `pos-${i}`,
    flavor: 'h100-80g',
    gpus: 1,
    seconds: 1e6,
  }));
  const server = await startFairway(60, seed);
  try {
    const serverFd = openFilesLimit(server.pid);
    const ids = await auroraIds(server);
    const member = server.tokens['aurora-research/MEMBER']!;
    const admin = server.tokens['aurora-research/TENANT_ADMIN']!;
    const counts = await settle(server, ids, admin, 60_000);
    const submitSeconds = (performance.now() - t0) / 1000;
    const running = await gql(
      server,
      admin,
      `query($t: ID!) { jobs(tenantId: $t, filter: { states: [ADMITTED, RUNNING] }, first: 100) { edges { node { id } } } }`,
      { t: ids.tenantId },
    );
    const admittedIds: string[] = running.jobs.edges.map((e: { node: { id: string } }) => e.node.id);
    const admittedSet = new Set(admittedIds);
    const watched = server.seeded.filter((id) => !admittedSet.has(id)).slice(0, n);
    console.log(
      `  n=${n}: ${server.seeded.length} jobs seeded, server up and settled after ${submitSeconds.toFixed(1)} s (${counts.admitted} admitted, ${counts.pending} pending); subscribing ${watched.length}`,
    );
    await sleep(500);
    const rssBefore = rssKiB(server.pid);

    // One socket per subscriber (each its own graphql-ws client and connection_init).
    const clients: Client[] = [];
    const initial = new Map<number, number | null>();
    const changedAt: number[] = new Array(watched.length).fill(NaN);
    let triggerAt = Infinity;
    const firstValue: Promise<void>[] = [];
    const failed: string[] = [];
    const disposers: (() => void)[] = [];
    const s0 = performance.now();
    const cpuSub0 = cpuSeconds(server.pid);
    const BATCH = 50;
    for (let b = 0; b < watched.length; b += BATCH) {
      const batch: Promise<void>[] = [];
      for (let i = b; i < Math.min(watched.length, b + BATCH); i++) {
        const client = wsClient(server, member);
        clients.push(client);
        batch.push(
          new Promise<void>((resolve) => {
            disposers.push(
              client.subscribe<{
                jobPosition: { state: string; position: { inQueue: number | null } | null };
              }>(
                {
                  query: `subscription($id: ID!) { jobPosition(id: $id) { state position { inQueue queueLength } } }`,
                  variables: { id: watched[i] },
                },
                {
                  next: (m) => {
                    const now = performance.timeOrigin + performance.now();
                    if (m.errors) {
                      if (!initial.has(i)) failed.push(JSON.stringify(m.errors).slice(0, 200));
                      initial.set(i, null);
                      return resolve();
                    }
                    const u = m.data!.jobPosition;
                    const value = u.state === 'PENDING' ? (u.position?.inQueue ?? null) : -1;
                    if (!initial.has(i)) {
                      initial.set(i, value);
                      resolve();
                    } else if (now >= triggerAt && Number.isNaN(changedAt[i]!) && value !== initial.get(i)) {
                      changedAt[i] = now;
                    }
                  },
                  error: (e) => {
                    if (!initial.has(i)) {
                      failed.push(
                        e instanceof Error
                          ? e.message
                          : String((e as { reason?: string }).reason ?? (e as { code?: number }).code ?? e),
                      );
                      initial.set(i, null);
                    }
                    resolve();
                  },
                  complete: () => undefined,
                },
              ),
            );
          }),
        );
      }
      firstValue.push(...batch);
      await Promise.all(batch);
    }
    await Promise.all(firstValue);
    const subscribeSeconds = (performance.now() - s0) / 1000;
    const cpuSubscribe = cpuSeconds(server.pid) - cpuSub0;
    await sleep(1000);
    const rssAfter = rssKiB(server.pid);
    console.log(
      `  n=${n}: ${watched.length} subscribed in ${subscribeSeconds.toFixed(1)} s; RSS ${f0(rssBefore / 1024)} → ${f0(rssAfter / 1024)} MiB`,
    );

    // Heads get admitted: watch the tenant's ADMITTED events for their timestamps.
    const watcher = wsClient(server, admin);
    const admitted: number[] = [];
    const watcherReady = new Promise<void>((r) => watcher.on('connected', () => r()));
    const disposeWatcher = watcher.subscribe<{ tenantEvents: { kind: string; at: string } }>(
      {
        query: `subscription($t: ID!) { tenantEvents(tenantId: $t) { kind at } }`,
        variables: { t: ids.tenantId },
      },
      {
        next: (m) =>
          m.data?.tenantEvents.kind === 'ADMITTED' && admitted.push(Date.parse(m.data.tenantEvents.at)),
        error: () => undefined,
        complete: () => undefined,
      },
    );
    await watcherReady;
    await sleep(200);

    // The trigger: cancel 1 running job; the head is admitted and everyone moves up one.
    const CANCEL = 1;
    const cpuDel0 = cpuSeconds(server.pid);
    triggerAt = performance.timeOrigin + performance.now();
    await Promise.all(
      admittedIds
        .slice(0, CANCEL)
        .map((id) => gql(server, admin, `mutation($id: ID!) { cancelJob(id: $id) { state } }`, { id })),
    );
    const waitStart = Date.now();
    const deadline = waitStart + budgetMs;
    const liveIdx = watched
      .map((_, i) => i)
      .filter((i) => initial.get(i) !== null && initial.get(i) !== undefined);
    while (Date.now() < deadline && liveIdx.some((i) => Number.isNaN(changedAt[i]!))) await sleep(100);
    const waitedMs = Date.now() - waitStart;
    const cpuDelivery = cpuSeconds(server.pid) - cpuDel0;
    const headAdmittedAt = admitted.length ? Math.min(...admitted) : NaN;
    const got = liveIdx.map((i) => changedAt[i]!).filter((t) => !Number.isNaN(t));
    const fromTrigger = got.map((t) => t - triggerAt).sort((a, b) => a - b);
    const fromAdmit = got.map((t) => t - headAdmittedAt).sort((a, b) => a - b);
    console.log(
      `  n=${n}: ${got.length}/${watched.length} saw their position change; p99 ${ms(pct(fromTrigger, 0.99))} ms after the trigger`,
    );

    disposeWatcher();
    for (const d of disposers) d();
    await Promise.all([watcher, ...clients].map((c) => c.dispose()));
    return {
      n: watched.length,
      seconds: { submit: submitSeconds, subscribe: subscribeSeconds },
      rssBefore,
      rssAfter,
      received: got.length,
      fromTrigger,
      fromAdmit,
      admitted: admitted.length,
      waitedMs,
      sockets: clients.length,
      failed,
      live: liveIdx.length,
      cpu: { subscribe: cpuSubscribe, delivery: cpuDelivery },
      serverFd,
    };
  } finally {
    reportServerErrors(server);
    await server.stop();
  }
}

export async function positionSubscribers(sizes: number[], deadline: number): Promise<void> {
  out('## 3. Concurrent `jobPosition` subscribers while the heads are admitted');
  out();
  out(
    'Targets: with 10,000 subscribers on one server, delivery p99 ≤ 1 s after the head\'s admission ("from ADMITTED p99"), ≤ 20 KiB server memory per subscriber.',
  );
  out();
  const rows: SubscriberRound[] = [];
  const skipped: string[] = [];
  const done: { n: number; setupMs: number; scaledMs: number }[] = [];
  // One socket per subscriber in this process and one in the server: the soft open-file limit
  // (Node cannot raise its own; the server child is started with its soft limit at the hard one).
  const benchFd = openFilesLimit();
  for (const n of sizes) {
    const spare = benchFd.soft - openFiles() - 100;
    if (n > spare) {
      skipped.push(
        `n=${n} not run: this process may open ${benchFd.soft} files (soft limit, /proc/self/limits; hard ${benchFd.hard}) and ${n} sockets do not fit; run \`ulimit -n ${n + 1000}\` in the shell before \`npm run bench:api\`.`,
      );
      continue;
    }
    const left = deadline - Date.now();
    // Extrapolated from the sizes already run: subscribing + delivering grows with the exponent
    // measured between the last two sizes (clamped to 1–2; 1 — one socket and one subscription
    // per subscriber — after a single size), setup (seeding, server start, first cycle) is taken
    // as half fixed, half proportional to n.
    const last = done.at(-1);
    let estimate = 0;
    let exponent = 1;
    if (last) {
      const before = done.at(-2);
      if (before)
        exponent = Math.min(
          2,
          Math.max(1, Math.log(last.scaledMs / before.scaledMs) / Math.log(last.n / before.n)),
        );
      estimate = last.setupMs * (0.5 + 0.5 * (n / last.n)) + last.scaledMs * (n / last.n) ** exponent;
    }
    if (last && estimate > left) {
      skipped.push(
        `n=${n} not run: extrapolated from n=${last.n} (growth exponent ${exponent.toFixed(2)}) it would take ~${(estimate / 1000).toFixed(0)} s, over the time left in the budget (BENCH_BUDGET_S) (${Math.max(0, left / 1000).toFixed(0)} s). ` +
          `Run it alone with \`BENCH_PARTS=3 BENCH_SUBSCRIBERS=${n} BENCH_BUDGET_S=900 npm run bench:api\`.`,
      );
      continue;
    }
    const started = Date.now();
    const row = await subscriberRound(n, Math.max(20_000, Math.min(300_000, left - 20_000)));
    rows.push(row);
    const scaledMs = row.seconds.subscribe * 1000 + row.waitedMs;
    done.push({ n, setupMs: Date.now() - started - scaledMs, scaledMs });
  }
  const serverFd = rows[0]?.serverFd;
  out(
    `Open-file limits (soft/hard): bench ${benchFd.soft}/${benchFd.hard}${serverFd ? `, server ${serverFd.soft}/${serverFd.hard}` : ''}. ` +
      "One queue (aurora-training), n + 32 one-GPU H100 jobs seeded in the database before start (setup = seeding + server start + first cycle); 16 admitted (aurora's nominal), the rest pending. " +
      'One graphql-ws socket per subscriber (one client each; no multiplexing), each `jobPosition(id)` of its own pending job, subscribed 50 at a time. ' +
      'Trigger: cancel 1 running job, so the queue head is admitted and every watched position changes by one. ' +
      "Latency to the first changed value each subscriber receives, from the trigger (cancel sent) and from the first head's ADMITTED timestamp. RSS = server VmRSS; KiB/subscriber = (RSS 1 s after the last subscribe − RSS before) / n. " +
      'Server CPU: process CPU time while subscribing (all n) and from the trigger until every subscriber had its change (the delivery round); "delivery CPU ms/sub" = the latter / n.',
  );
  out();
  out(
    table(
      [
        'subscribers',
        'setup s',
        'subscribe s',
        'server CPU s',
        'delivery CPU s',
        'delivery CPU ms/sub',
        'RSS before MiB',
        'after MiB',
        'KiB/subscriber',
        'changed/n',
        'from trigger p50 ms',
        'p99 ms',
        'max ms',
        'from ADMITTED p50 ms',
        'p99 ms',
      ],
      rows.map((r) => [
        String(r.n),
        r.seconds.submit.toFixed(1),
        r.seconds.subscribe.toFixed(1),
        r.cpu.subscribe.toFixed(1),
        r.cpu.delivery.toFixed(1),
        ms((1000 * r.cpu.delivery) / r.n),
        f0(r.rssBefore / 1024),
        f0(r.rssAfter / 1024),
        f1((r.rssAfter - r.rssBefore) / r.n),
        `${r.received}/${r.live}${r.received < r.live ? ` (gave up after ${(r.waitedMs / 1000).toFixed(0)} s)` : ''}`,
        ms(pct(r.fromTrigger, 0.5)),
        ms(pct(r.fromTrigger, 0.99)),
        ms(r.fromTrigger.at(-1) ?? NaN),
        ms(pct(r.fromAdmit, 0.5)),
        ms(pct(r.fromAdmit, 0.99)),
      ]),
    ),
  );
  out();
  for (const r of rows) {
    if (r.failed.length) out(`- n=${r.n}: ${r.failed.length} subscriptions failed (first: ${r.failed[0]}).`);
  }
  for (const r of rows) {
    const kib = (r.rssAfter - r.rssBefore) / r.n;
    const p99 = r.received < r.live ? Infinity : pct(r.fromAdmit, 0.99);
    out(
      `- n=${r.n}: delivery p99 ${Number.isFinite(p99) ? `${ms(p99)} ms` : 'not all delivered'} after the head's ADMITTED (target ≤ 1,000 ms: ${p99 === Infinity ? 'NOT met' : verdict(p99, '<=', 1000)}), ${f1(kib)} KiB/subscriber (target ≤ 20: ${verdict(kib, '<=', 20)})${r.n < 10_000 ? ' — the targets are set at 10,000' : ''}.`,
    );
  }
  for (const s of skipped) out(`- ${s}`);
  out();
}
