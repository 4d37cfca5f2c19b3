// Bounded tails (README, "Reservations"): Slurm's backfill idea for the head of a queue that has
// waited too long. When such a head fails on nodes (or on cohort quota), nodes are reserved for it at
// its earliest start — computed from running jobs' expected ends — and a job that would borrow for a
// placement, at the holder's priority or lower, may use those nodes only if it is expected to end
// before that start. Jobs within their queue's nominal are never kept off (the guarantee comes first).
// Reservations are decision state changed only by the cycle (never by a what-if), so explain, preview
// and the ETA search only read them.
import { eligibleFor } from './assignment/eligible.js';
import type { Fail } from './assignment/plan.js';
import { FIT } from './assignment/quota-mode.js';
import { fitsPod, type NodeState, nodeCanEverHold, podsThatFit } from './nodes.js';
import type { Reservation } from './reservation-state.js';
import type { CoreState, JobState } from './state.js';
import { wakeFlavor, wakeQueueIf } from './wake.js';

/** How often the cycle looks through pending jobs for heads that became due (clock ms). */
export const SCAN_EVERY_MS = 60_000;

/**
 * Aging (order phase, cycle.ts): a head pending at least `afterMs` sorts before every share, oldest
 * first (its key is far below any share and grows with its pending-since time); others keep `share`.
 */
export function agedShare(core: CoreState, j: JobState, now: number, share: number): number {
  const after = core.reserve.agingAfterMs;
  if (after === null) return share;
  const since = pendingSince(j);
  return now - since >= after ? -1e15 + since : share;
}

/** When a job started waiting this time: its submit, or its last preemption. */
export function pendingSince(j: JobState): number {
  return Math.max(j.spec.submitTime, j.lastPreemption?.at ?? Number.NEGATIVE_INFINITY);
}

/** Expected end if admitted at `now`: now + expectedDurationMs (else maxRunMs), or never. */
function endIfAdmitted(j: JobState, now: number): number {
  const d = j.spec.expectedDurationMs ?? j.spec.maxRunMs;
  return d === undefined ? Number.POSITIVE_INFINITY : now + d;
}

/** The reservations that keep `job` off their nodes (it would borrow there, has no higher priority, and ends after their start). */
export function blockingReservations(core: CoreState, job: JobState): Reservation[] {
  const out: Reservation[] = [];
  const list = core.reserve.list;
  if (list.length === 0) return out;
  const end = endIfAdmitted(job, core.clock.now());
  for (const r of list) {
    if (r.job === job || r.job.status !== 'pending') continue;
    if (job.priority > r.job.priority || end <= r.start) continue;
    out.push(r);
  }
  return out;
}

/**
 * The node filter for one placement of `job` on a flavor in quota mode `mode` (direct.ts): the same
 * filter unless a reservation keeps the job off some nodes (it would borrow, see blockingReservations).
 */
export function reservationGate(
  core: CoreState,
  job: JobState,
  mode: number,
  eligible: (n: NodeState) => boolean,
): (n: NodeState) => boolean {
  if (mode === FIT || core.reserve.list.length === 0) return eligible;
  const rs = blockingReservations(core, job);
  if (rs.length === 0) return eligible;
  return (n) => eligible(n) && !rs.some((r) => r.nodeSet.has(n));
}

/**
 * After a direct assignment failed on nodes: was it only the reservations? (Some blocking reserved
 * node has room for a pod and, with them, the pods would fit — a trial placement, rolled back.)
 * Such a job waits for the nodes rather than preempting its way around the reservation.
 */
export function keptOffReserved(
  core: CoreState,
  job: JobState,
  flavors: string[],
): { nodes: number; start: number } | null {
  const rs = blockingReservations(core, job);
  if (rs.length === 0) return null;
  const eligible = eligibleFor(job);
  let nodes = 0;
  let start = Number.POSITIVE_INFINITY;
  for (const r of rs) {
    if (!flavors.includes(r.flavor)) continue;
    const room = r.nodes.filter(
      (n) => eligible(n) && job.podSets.some((ps) => ps.flavors.includes(r.flavor) && fitsPod(n, ps.shape)),
    ).length;
    if (room === 0) continue;
    nodes += room;
    start = Math.min(start, r.start);
  }
  return nodes > 0 ? { nodes, start } : null;
}

/** The reservation `job` holds, if any. */
export function reservationOf(core: CoreState, job: JobState): Reservation | undefined {
  return core.reserve.list.find((r) => r.job === job);
}

/**
 * Start of the cycle: drop reservations whose job is no longer pending in its queue (cancelled,
 * finished, held); then, at most once per SCAN_EVERY_MS of the clock, renew the held reservations and
 * give free slots to the longest-waiting due jobs (a parked job may not be tried again for hours:
 * waiting for a failure to reserve would come too late).
 */
export function prepareReservations(core: CoreState, now: number): void {
  const rs = core.reserve;
  for (const r of [...rs.list]) {
    if (r.job.status !== 'pending' || r.job.held || core.jobs.get(r.job.spec.id) !== r.job) drop(core, r);
  }
  if (rs.afterMs === null || now < rs.lastScan + SCAN_EVERY_MS) return;
  rs.lastScan = now;
  for (const r of [...rs.list]) renew(core, r.job, now);
  if (rs.list.length >= rs.max) return;
  const due: JobState[] = [];
  for (const q of core.queues.values()) {
    if (q.heap.size + q.parked.size === 0) continue;
    for (const j of q.heap.values()) if (isDue(core, j, now)) due.push(j);
    for (const j of q.parked) if (isDue(core, j, now)) due.push(j);
  }
  due.sort(
    (a, b) =>
      b.priority - a.priority || pendingSince(a) - pendingSince(b) || (a.spec.id < b.spec.id ? -1 : 1),
  );
  for (const j of due) {
    if (rs.list.length >= rs.max) break;
    renew(core, j, now);
  }
}

function isDue(core: CoreState, j: JobState, now: number): boolean {
  if (
    j.podSets.length !== 1 ||
    now - pendingSince(j) < (core.reserve.afterMs as number) ||
    reservationOf(core, j)
  )
    return false;
  // Tried and failed for a reason a reservation can help (a job not yet tried may simply fit).
  return j.decision !== null && dueReason(j.decision);
}

/** After a head was admitted: its reservation (if any) is done; reserved nodes it did not take wake their
 * waiters.
 */
export function admittedWithReservation(core: CoreState, job: JobState): void {
  const r = reservationOf(core, job);
  if (r) drop(core, r);
}

function drop(core: CoreState, r: Reservation): void {
  core.reserve.list.splice(core.reserve.list.indexOf(r), 1);
  core.stateVersion++;
  wakeFreed(core, r.flavor, r.nodes);
}

function wakeFreed(core: CoreState, flavor: string, nodes: NodeState[]): void {
  const free = nodes.filter((n) => n.freeGpuTotal > 0 || n.pods === 0);
  if (free.length > 0) wakeFlavor(core, flavor, free);
}

/**
 * After a head failed (cycle.ts): if it has waited at least `afterMs` and failed on nodes, or on
 * quota its cohort lacks (not its own limits), (re)compute its reservation: the earliest instant at
 * which running jobs' expected ends free enough nodes for its gang, and the fewest nodes that hold it
 * then. Nodes of other reservations are left out. At most `max` reservations are held.
 */
export function reserveIfDue(core: CoreState, job: JobState, fail: Fail, now: number): void {
  const rs = core.reserve;
  if (rs.afterMs === null || job.podSets.length !== 1 || job.status !== 'pending') return;
  if (now - pendingSince(job) < rs.afterMs) return;
  if (!dueReason(fail)) return;
  renew(core, job, now);
}

/** (Re)computes the job's reservation if it holds one or a slot is free; dropped if it could never start. */
function renew(core: CoreState, job: JobState, now: number): void {
  const rs = core.reserve;
  const mine = reservationOf(core, job);
  if (!mine && rs.list.length >= rs.max) return;
  const exclude = new Set<NodeState>();
  for (const r of rs.list) if (r !== mine) for (const n of r.nodes) exclude.add(n);
  const found = earliestStart(core, job, now, exclude);
  if (!found) {
    if (mine) drop(core, mine);
    return;
  }
  if (
    mine &&
    mine.flavor === found.flavor &&
    mine.start === found.start &&
    sameNodes(mine.nodes, found.nodes)
  )
    return;
  const next: Reservation = {
    job,
    flavor: found.flavor,
    nodes: found.nodes,
    nodeSet: new Set(found.nodes),
    start: found.start,
  };
  if (mine) {
    rs.list[rs.list.indexOf(mine)] = next;
    wakeFreed(
      core,
      mine.flavor,
      mine.nodes.filter((n) => !next.nodeSet.has(n)),
    );
  } else rs.list.push(next);
  core.stateVersion++;
  // Its nodes are free now: give it its try in this cycle (it may be parked on a need no release will meet).
  if (next.start <= now && job.parked) wakeQueueIf(core, job.queue, (x) => x === job);
}

function dueReason(fail: Pick<Fail, 'reason' | 'shortfall'>): boolean {
  if (fail.reason === 'NoNodeFits') return true;
  if (fail.reason !== 'WaitingForQuota' || !fail.shortfall) return false;
  // Short of quota the cohort lacks now; its own nominal + borrowing limit would allow it.
  const s = fail.shortfall;
  return s.requested <= s.nominal + (s.borrowingLimit ?? Number.POSITIVE_INFINITY) - s.used;
}

function sameNodes(a: NodeState[], b: NodeState[]): boolean {
  return a.length === b.length && a.every((n, i) => n === b[i]);
}

/**
 * On each flavor of the job's pod set (preference order, earliest start wins): free capacity of its
 * eligible nodes now, plus each running job's allocation released at its expected end (never when
 * it has none), until the gang minimum fits; the nodes are the fewest that hold it then.
 */
export function earliestStart(
  core: CoreState,
  job: JobState,
  now: number,
  exclude: Set<NodeState>,
): { flavor: string; start: number; nodes: NodeState[] } | null {
  const ps = job.podSets[0];
  if (!ps) return null;
  const need = ps.minCount;
  const eligible = eligibleFor(job);
  let best: { flavor: string; start: number; nodes: NodeState[] } | null = null;
  for (const f of ps.flavors) {
    const fs = core.flavors.get(f);
    if (!fs || !job.queue.node.flavors.has(f)) continue;
    const copies = new Map<NodeState, NodeState>();
    for (const n of fs.nodes) {
      if (!eligible(n) || exclude.has(n) || !nodeCanEverHold(n, ps.shape)) continue;
      copies.set(n, { ...n, gpuFree: [...n.gpuFree] });
    }
    const fit = new Map<NodeState, number>();
    let total = 0;
    for (const [n, c] of copies) {
      const k = Math.min(need, podsThatFit(c, ps.shape));
      fit.set(n, k);
      total += k;
    }
    let start = now;
    if (total < need) {
      const events: { at: number; j: JobState }[] = [];
      for (const q of core.queues.values())
        for (const o of q.admitted) {
          const d = o.spec.expectedDurationMs ?? o.spec.maxRunMs;
          if (d === undefined || !o.allocs.some((a) => copies.has(a.node))) continue;
          events.push({ at: Math.max(now, o.admittedAt + d), j: o });
        }
      events.sort((a, b) => a.at - b.at || (a.j.spec.id < b.j.spec.id ? -1 : 1));
      let i = 0;
      while (total < need && i < events.length) {
        const at = (events[i] as (typeof events)[number]).at;
        while (i < events.length && (events[i] as (typeof events)[number]).at === at) {
          for (const a of (events[i] as (typeof events)[number]).j.allocs) {
            const c = copies.get(a.node);
            if (!c) continue;
            for (let g = 0; g < a.gpus.length; g++) {
              const idx = a.gpus[g] as number;
              c.gpuFree[idx] = (c.gpuFree[idx] as number) + (a.gpuMilli[g] as number);
              c.freeGpuTotal += a.gpuMilli[g] as number;
            }
            c.cpuFree += a.cpu;
            c.memFree += a.mem;
            const k = Math.min(need, podsThatFit(c, ps.shape));
            total += k - (fit.get(a.node) as number);
            fit.set(a.node, k);
          }
          i++;
        }
        start = at;
      }
      if (total < need) continue;
    }
    if (best && best.start <= start) continue;
    // The fewest nodes: most pods first, then name.
    const ranked = [...fit.entries()]
      .filter(([, k]) => k > 0)
      .sort((a, b) => b[1] - a[1] || (a[0].spec.name < b[0].spec.name ? -1 : 1));
    const nodes: NodeState[] = [];
    let got = 0;
    for (const [n, k] of ranked) {
      if (got >= need) break;
      nodes.push(n);
      got += k;
    }
    nodes.sort((a, b) => (a.spec.name < b.spec.name ? -1 : 1));
    best = { flavor: f, start, nodes };
  }
  return best;
}
