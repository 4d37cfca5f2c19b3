// What CoreState holds for bounded tails (reservation.ts): the reservations and their settings,
// apart from reservation.ts so that state.ts needs none of the cycle's modules.
import type { NodeState } from './nodes.js';
import type { JobState } from './state.js';
import type { SchedulerOptions } from './types.js';

/** Default wait before a head may hold a reservation (pending since submit or its last preemption). */
export const DEFAULT_RESERVE_AFTER_MS = 2 * 3600_000;
export const DEFAULT_RESERVE = true;
export const DEFAULT_AGING = false;
/** Default number of reservations held at once (cluster-wide). */
export const DEFAULT_MAX_RESERVATIONS = 4;

export interface Reservation {
  job: JobState;
  flavor: string;
  /** The nodes kept for the job, sorted by name. */
  nodes: NodeState[];
  nodeSet: Set<NodeState>;
  /** Earliest start (ms epoch) from running jobs' expected ends; jobs ending by then may use the nodes. */
  start: number;
}

export interface ReservationState {
  /** null: reservations are off. */
  afterMs: number | null;
  /** null: aging is off. */
  agingAfterMs: number | null;
  max: number;
  /** Held reservations, oldest first. */
  list: Reservation[];
  /** Clock of the last scan of pending jobs for due heads (once per SCAN_EVERY_MS, reservation.ts). */
  lastScan: number;
}

export function createReservationState(opts: SchedulerOptions): ReservationState {
  const o = opts.boundedTails;
  const after = o?.afterMs ?? DEFAULT_RESERVE_AFTER_MS;
  return {
    afterMs: (o?.reserve ?? DEFAULT_RESERVE) ? after : null,
    agingAfterMs: (o?.aging ?? DEFAULT_AGING) ? after : null,
    max: o?.maxReservations ?? DEFAULT_MAX_RESERVATIONS,
    list: [],
    lastScan: Number.NEGATIVE_INFINITY,
  };
}
