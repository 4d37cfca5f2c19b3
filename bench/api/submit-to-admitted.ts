// Part 2: submit → ADMITTED latency as seen by a graphql-ws `tenantEvents` subscriber, open loop
// at 50 and 500 submits/s, measured from the moment each submit was due.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { post, sleep, wsClient } from './load-client.js';
import { cpuSeconds, loadAvg, sched, schedShare } from './process-stats.js';
import { f1, ms, out, pct, reportServerErrors, table } from './report.js';
import { startFairway } from './servers.js';
import { auroraIds, settle, SUBMIT, submitMany } from './tenant-setup.js';

export async function submitToAdmitted(seconds: number): Promise<void> {
  out('## 2. Submit → ADMITTED latency seen by a `tenantEvents` subscriber');
  out();
  const WINDOW_S = 15; // after the last submit was due, how long we wait for acknowledgements and events
  const server = await startFairway(1000);
  const rows: string[][] = [];
  const notes: string[] = [];
  let closing = false;
  try {
    const ids = await auroraIds(server);
    const member = server.tokens['aurora-research/MEMBER']!;
    const admin = server.tokens['aurora-research/TENANT_ADMIN']!;
    const client = wsClient(server, admin);
    // jobId → when the ADMITTED event arrived and its own timestamp (may come before the submit's answer).
    const admittedAt = new Map<string, { recv: number; at: number }>();
    let anyEvent = false;
    const connected = new Promise<void>((r) => client.on('connected', () => r()));
    const dispose = client.subscribe<{ tenantEvents: { kind: string; jobId: string | null; at: string } }>(
      { query: `subscription($t: ID!) { tenantEvents(tenantId: $t) { kind jobId at } }`, variables: { t: ids.tenantId } },
      {
        next: (m) => {
          const recv = performance.timeOrigin + performance.now();
          const e = m.data?.tenantEvents;
          if (e?.kind === 'ADMITTED' && e.jobId && !admittedAt.has(e.jobId)) admittedAt.set(e.jobId, { recv, at: Date.parse(e.at) });
          anyEvent = true;
        },
        error: (e) => {
          if (!closing) console.error('tenantEvents subscription failed:', e instanceof Error ? e.message : e);
        },
        complete: () => undefined,
      },
    );
    await connected;
    // The subscription is live once a probe job is seen admitted.
    for (let i = 0; i < 200 && !anyEvent; i++) {
      if (i % 20 === 0) await submitMany(server, member, 1, 1, () => ({ queueId: ids.queueId, name: `probe-${i}`, podSets: [{ gpusPerPod: 1, flavors: ['a100-1g.10gb'] }], expectedDurationSeconds: 1 }));
      await sleep(50);
    }

    for (const rate of [50, 500]) {
      const total = Math.round(rate * seconds);
      const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
      const target = new URL(server.url);
      const acked: { id: string; due: number; answeredAfter: number }[] = [];
      let errors = 0;
      let sent = 0;
      let outstanding = 0;
      let open = true;
      const cpu0 = cpuSeconds(server.pid);
      const sched0 = sched(server.pid);
      const wallStart = performance.timeOrigin + performance.now();
      const wallNow = () => performance.timeOrigin + performance.now();
      // Open loop: submit i is due at start + i/rate, whatever happened to the earlier ones.
      while (sent < total) {
        const due = Math.min(total, Math.floor(((wallNow() - wallStart) * rate) / 1000) + 1);
        while (sent < due) {
          const i = sent++;
          const scheduled = wallStart + (i * 1000) / rate;
          const bodyText = JSON.stringify({
            query: SUBMIT,
            variables: { in: { queueId: ids.queueId, projectId: ids.projectId, name: `r${rate}-${i}`, podSets: [{ gpusPerPod: 1, flavors: ['a100-1g.10gb'] }], expectedDurationSeconds: 30 } },
          });
          outstanding++;
          post(agent, target, member, bodyText).then(
            (res) => {
              outstanding--;
              if (!open) return;
              const id = (JSON.parse(res.text) as { data?: { submitJob?: { id: string } } }).data?.submitJob?.id;
              if (id) acked.push({ id, due: scheduled, answeredAfter: wallNow() - scheduled });
              else errors++;
            },
            () => {
              outstanding--;
              if (open) errors++;
            },
          );
        }
        await sleep(1);
      }
      const lastDue = wallStart + ((total - 1) * 1000) / rate;
      const windowEnd = lastDue + WINDOW_S * 1000;
      while (wallNow() < windowEnd && (outstanding > 0 || acked.some((a) => !admittedAt.has(a.id)))) await sleep(50);
      open = false;
      const wallEnd = wallNow();
      const cpu = cpuSeconds(server.pid) - cpu0;
      const share = schedShare(sched0, sched(server.pid), wallEnd - wallStart);
      const stillOutstanding = outstanding;
      agent.destroy();
      // Every offered submit counts: one not acknowledged or not seen admitted in the window is "> window".
      const lat: number[] = [];
      const serverLat: number[] = [];
      const resp = acked.map((a) => a.answeredAfter);
      let lastAdmit = wallStart;
      for (const a of acked) {
        const seen = admittedAt.get(a.id);
        if (!seen || seen.recv > windowEnd) continue;
        lat.push(seen.recv - a.due);
        serverLat.push(seen.at - a.due);
        lastAdmit = Math.max(lastAdmit, seen.recv);
      }
      const measured = lat.length;
      const pad = (xs: number[]) => [...xs, ...new Array<number>(Math.max(0, total - xs.length)).fill(Infinity)].sort((x, y) => x - y);
      const lp = pad(lat);
      const sp = pad(serverLat);
      const rp = pad(resp);
      const over = `> ${WINDOW_S} s`;
      const show = (v: number) => (v === Infinity ? over : ms(v));
      rows.push([
        `${rate}/s`,
        `${acked.length}/${total}`,
        f1(acked.length / ((wallEnd - wallStart) / 1000)),
        f1(measured / ((lastAdmit - wallStart) / 1000)),
        show(pct(rp, 0.5)),
        show(pct(rp, 0.99)),
        show(pct(sp, 0.5)),
        show(pct(lp, 0.5)),
        show(pct(lp, 0.99)),
        `${measured}/${total}`,
        share,
        ms((1000 * cpu) / Math.max(1, acked.length)),
        String(errors),
      ]);
      notes.push(
        `${rate}/s: ${total} submits offered over ${seconds} s; ${acked.length} acknowledged and ${measured} seen ADMITTED within ${WINDOW_S} s of the last one being due` +
          (stillOutstanding ? ` (${stillOutstanding} submits still unanswered then)` : '') +
          `; load average ${loadAvg()}.`,
      );
      console.log(`  ${rate}/s: ${acked.length} acknowledged, ${measured} ADMITTED seen, p50 ${show(pct(lp, 0.5))} p99 ${show(pct(lp, 0.99))}`);
      if (rate !== 500) await settle(server, ids, admin, 20_000); // let the 30 ms jobs finish
    }
    closing = true;
    dispose();
    await client.dispose();
    out(
      'Open loop, 1-slice MIG jobs (30 declared s at time scale 1000 = 30 ms real) into aurora-training (56 slices nominal, 112 with borrowing), ' +
        `${seconds} s per rate, one aurora MEMBER submitting over up to 64 keep-alive connections. Latency from the moment each submit was due ` +
        '(so queueing in a server that falls behind counts) to the ADMITTED event arriving at the subscriber; "server admit" uses the event\'s own timestamp. ' +
        `Percentiles are over all offered submits; one not seen admitted within ${WINDOW_S} s counts as "> ${WINDOW_S} s". On-CPU / waiting = share of the window the server\'s JS thread ran / was runnable but waited for a core (/proc/<pid>/schedstat); the rest it was idle (waiting for I/O or work). CPU per job = server process CPU time (all threads) in the window / acknowledged submits (it includes admitting, starting and finishing them).`,
    );
    out();
    out(table(['offered', 'acked', 'acked/s', 'admitted/s', 'submit answer p50', 'p99', 'server admit p50', 'ADMITTED seen p50', 'p99', 'measured', 'server thread on-CPU / waiting for CPU', 'server CPU ms per acked job', 'errors'], rows));
    out();
    for (const n of notes) out(`- ${n}`);
    out();
  } finally {
    closing = true;
    reportServerErrors(server);
    await server.stop();
  }
}
