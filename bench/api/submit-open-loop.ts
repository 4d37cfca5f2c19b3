// Part 2's load generator: one open-loop rate of `submitJob` against a running server, with the
// ADMITTED events a `tenantEvents` subscriber has seen (filled in by the caller's subscription).
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { post, sleep } from './load-client.js';
import { cpuSeconds, sched, schedShare } from './process-stats.js';
import type { Started } from './servers.js';
import { type Ids, SUBMIT } from './tenant-setup.js';

/** The submitter's connections: enough that a server answering in ≤ 100 ms is never throttled by the client
 * at 1,000/s.
 */
export const SUBMIT_SOCKETS = 128;
/** After the last submit was due, how long answers and ADMITTED events are still waited for. */
export const DRAIN_S = 10;
/** Offering stops once this many seconds' worth of submits are unanswered (the server is behind: more only
 * queues).
 */
export const BACKLOG_S = 3;

export interface Seen {
  /** When the ADMITTED event reached the subscriber (epoch ms). */
  recv: number;
  /** The event's own timestamp (epoch ms). */
  at: number;
}

export interface RateResult {
  rate: number;
  offered: number;
  /** Submits actually sent (fewer than offered when offering stopped on a backlog). */
  sent: number;
  stoppedAtS: number | null;
  acked: number;
  /** Answers / ADMITTED events received inside the offered window [start, start + seconds], per second. */
  ackedPerS: number;
  admittedPerS: number;
  /** ms from due, over all offered submits (Infinity: not answered / not seen within the drain). */
  answer: number[];
  serverAdmit: number[];
  seenAdmitted: number[];
  seen: number;
  share: string;
  cpuMsPerAcked: number;
  errors: number;
  firstError: string | null;
  unanswered: number;
}

/** Offers `rate` submits/s for `seconds` (submit i due at start + i/rate), then waits up to DRAIN_S. */
export async function openLoopRate(
  server: Started,
  ids: Ids,
  token: string,
  rate: number,
  seconds: number,
  admittedAt: Map<string, Seen>,
  tag: string,
): Promise<RateResult> {
  const total = Math.round(rate * seconds);
  const agent = new http.Agent({ keepAlive: true, maxSockets: SUBMIT_SOCKETS });
  const target = new URL(server.url);
  const acked: { id: string; due: number; answeredAfter: number; at: number }[] = [];
  let errors = 0;
  let firstError: string | null = null;
  const fail = (what: string) => {
    errors++;
    firstError ??= what.slice(0, 200);
  };
  let sent = 0;
  let outstanding = 0;
  let open = true;
  let stoppedAtS: number | null = null;
  const now = () => performance.timeOrigin + performance.now();
  const cpu0 = cpuSeconds(server.pid);
  const sched0 = sched(server.pid);
  const start = now();
  while (sent < total) {
    if (outstanding > rate * BACKLOG_S) {
      stoppedAtS = (now() - start) / 1000;
      break;
    }
    const due = Math.min(total, Math.floor(((now() - start) * rate) / 1000) + 1);
    while (sent < due) {
      const i = sent++;
      const scheduled = start + (i * 1000) / rate;
      const body = JSON.stringify({
        query: SUBMIT,
        variables: {
          in: {
            queueId: ids.queueId,
            projectId: ids.projectId,
            name: `${tag}-${i}`,
            idempotencyKey: `${tag}-${i}`,
            podSets: [{ gpusPerPod: 1, flavors: ['a100-1g.10gb'] }],
            expectedDurationSeconds: 30,
          },
        },
      });
      outstanding++;
      post(agent, target, token, body).then(
        (res) => {
          outstanding--;
          if (!open) return;
          const id = (JSON.parse(res.text) as { data?: { submitJob?: { id: string } } }).data?.submitJob?.id;
          const t = now();
          if (id) acked.push({ id, due: scheduled, answeredAfter: t - scheduled, at: t });
          else fail(`${res.status} ${res.text}`);
        },
        (error: unknown) => {
          outstanding--;
          if (open) fail(error instanceof Error ? error.message : String(error));
        },
      );
    }
    await sleep(1);
  }
  const windowEnd = start + seconds * 1000;
  const drainEnd = Math.max(now(), start + ((total - 1) * 1000) / rate) + DRAIN_S * 1000;
  while (now() < drainEnd && (outstanding > 0 || acked.some((a) => !admittedAt.has(a.id)))) await sleep(50);
  open = false;
  const end = now();
  const cpu = cpuSeconds(server.pid) - cpu0;
  const share = schedShare(sched0, sched(server.pid), end - start);
  const unanswered = outstanding;
  // Requests still queued in the agent are dropped; the ≤ SUBMIT_SOCKETS in flight finish on the server.
  agent.destroy();
  const answer: number[] = acked.map((a) => a.answeredAfter);
  const serverAdmit: number[] = [];
  const seenAdmitted: number[] = [];
  let admittedInWindow = 0;
  for (const a of acked) {
    const seen = admittedAt.get(a.id);
    if (!seen || seen.recv > drainEnd) continue;
    seenAdmitted.push(seen.recv - a.due);
    serverAdmit.push(seen.at - a.due);
    if (seen.recv <= windowEnd) admittedInWindow++;
  }
  // Every offered submit counts: one not answered / not seen admitted is Infinity ("> drain").
  const pad = (xs: number[]) =>
    [...xs, ...new Array<number>(Math.max(0, total - xs.length)).fill(Infinity)].sort((x, y) => x - y);
  return {
    rate,
    offered: total,
    sent,
    stoppedAtS,
    acked: acked.length,
    ackedPerS: acked.filter((a) => a.at <= windowEnd).length / seconds,
    admittedPerS: admittedInWindow / seconds,
    answer: pad(answer),
    serverAdmit: pad(serverAdmit),
    seenAdmitted: pad(seenAdmitted),
    seen: seenAdmitted.length,
    share,
    cpuMsPerAcked: (1000 * cpu) / Math.max(1, acked.length),
    errors,
    firstError,
    unanswered,
  };
}
