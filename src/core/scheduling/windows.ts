// Time windows: is a weekly window open at an instant, in a named IANA time zone.
// Intl.DateTimeFormat is pure JS (no I/O); formatters are cached per zone.
import type { CoreState } from './state.js';
import type { TimeWindowSpec } from './types.js';

const formatters = new Map<string, Intl.DateTimeFormat>();
const WEEKDAYS: Record<string, number> = { Sun: 0, Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6 };

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** Weekday (0=Sun) and minute of day at `at` in `timeZone`. */
export function localTime(at: number, timeZone: string): { day: number; minute: number } {
  let day = 0;
  let hour = 0;
  let minute = 0;
  for (const p of formatter(timeZone).formatToParts(at)) {
    if (p.type === 'weekday') day = WEEKDAYS[p.value] ?? 0;
    else if (p.type === 'hour') hour = Number(p.value) % 24;
    else if (p.type === 'minute') minute = Number(p.value);
  }
  return { day, minute: hour * 60 + minute };
}

/** Parses 'HH:MM' (00:00..24:00) to minutes; throws on malformed input. */
export function parseClock(s: string): number {
  const m = /^(\d{1,2}):(\d{2})$/.exec(s);
  if (!m) throw new Error(`bad time '${s}'`);
  const h = Number(m[1]);
  const min = Number(m[2]);
  if (h > 24 || min > 59 || (h === 24 && min !== 0)) throw new Error(`bad time '${s}'`);
  return h * 60 + min;
}

/** Is the window open at local weekday `day` (0=Sun), `minute` of the day (start/end parsed). */
function openAt(w: TimeWindowSpec, start: number, end: number, day: number, minute: number): boolean {
  if (start < end) return w.days.includes(day) && minute >= start && minute < end;
  const prev = (day + 6) % 7;
  return (w.days.includes(day) && minute >= start) || (w.days.includes(prev) && minute < end);
}

/** A window whose end is at or before its start runs past midnight; `days` name the day it starts. */
export function windowOpen(w: TimeWindowSpec, at: number): boolean {
  const { day, minute } = localTime(at, w.timeZone);
  return openAt(w, parseClock(w.start), parseClock(w.end), day, minute);
}

// ───────────────────────────── the next window change ─────────────────────────────
// A caller that moves its own clock (the simulator) needs the next instant at which some
// queue's open window (the index `openWindow` picks) changes, so that it can run a cycle there.
// Windows are evaluated per clock minute in their zone (`windowOpen`), so a change happens at the
// start of a UTC minute (for zones whose offset is a whole number of minutes: all of them since
// 1972). Within a span where the zone's offset is constant, local time advances minute by minute,
// so the next change is the next local minute at which the window's weekly open/closed pattern
// flips; an offset change (DST) is found by bisection and evaluated as the instant it is.

const MINUTE = 60_000;
const DAY_MIN = 1440;
const WEEK_MIN = 7 * DAY_MIN;
/** Steps of at most a day, so that two offset changes between two probes cannot go unseen. */
const MAX_STEP_MIN = DAY_MIN;
/**
 * How far ahead a change is looked for. A window's pattern repeats weekly, so a queue whose open
 * window does not change within 15 days (every local minute of the week seen at least twice, DST
 * gaps included) never changes: the result is `undefined`.
 */
export const WINDOW_LOOKAHEAD_MS = 15 * DAY_MIN * MINUTE;

/** A window's weekly pattern over local minutes of the week (0 = Sunday 00:00). */
interface WeekPattern {
  /** open[m]: the window is open at local week minute m. */
  open: Uint8Array;
  /** flip[m]: minutes from m to the next week minute with the other value (0: never flips). */
  flip: Uint16Array;
}
const patterns = new WeakMap<TimeWindowSpec, WeekPattern>();

function pattern(w: TimeWindowSpec): WeekPattern {
  let p = patterns.get(w);
  if (p) return p;
  const start = parseClock(w.start);
  const end = parseClock(w.end);
  const open = new Uint8Array(WEEK_MIN);
  for (let m = 0; m < WEEK_MIN; m++)
    open[m] = openAt(w, start, end, Math.floor(m / DAY_MIN), m % DAY_MIN) ? 1 : 0;
  const flip = new Uint16Array(WEEK_MIN);
  // the first week minute m0 whose predecessor differs; none means a constant pattern
  let m0 = -1;
  for (let m = 0; m < WEEK_MIN; m++) if (open[m] !== open[(m + WEEK_MIN - 1) % WEEK_MIN]) m0 = m;
  if (m0 >= 0) {
    // walk backwards from m0 around the week: distance to the next flip
    let d = 0;
    for (let k = 1; k <= WEEK_MIN; k++) {
      const m = (m0 - k + WEEK_MIN) % WEEK_MIN;
      const nxt = (m + 1) % WEEK_MIN;
      d = open[nxt] !== open[m] ? 1 : d + 1;
      flip[m] = d;
    }
  }
  p = { open, flip };
  patterns.set(w, p);
  return p;
}

const mod = (a: number, n: number): number => ((a % n) + n) % n;
/** Local minute of the week at `at` (a minute start) in `timeZone`. */
function localWeekMinute(at: number, timeZone: string): number {
  const { day, minute } = localTime(at, timeZone);
  return day * DAY_MIN + minute;
}
/** UTC minute of the week (1970-01-01 was a Thursday). */
const utcWeekMinute = (at: number): number => mod(Math.floor(at / MINUTE) + 4 * DAY_MIN, WEEK_MIN);
/** The zone's offset at `at`, in minutes modulo a week (only compared for equality). */
const offsetAt = (at: number, timeZone: string): number =>
  mod(localWeekMinute(at, timeZone) - utcWeekMinute(at), WEEK_MIN);

/** The first instant after `after` (and not after `limit`) at which `windowOpen(w, ·)` changes, or undefined. */
export function nextWindowFlip(w: TimeWindowSpec, after: number, limit: number): number | undefined {
  const p = pattern(w);
  const tz = w.timeZone;
  let t = Math.floor(after / MINUTE) * MINUTE; // the value at `after` is the value of its minute
  let lm = localWeekMinute(t, tz);
  if (p.flip[lm] === 0) return undefined; // always open or always closed, whatever the offset
  const v0 = p.open[lm];
  let off = mod(lm - utcWeekMinute(t), WEEK_MIN);
  while (t < limit) {
    const d = p.flip[lm] as number;
    const step = Math.min(d, MAX_STEP_MIN);
    const cand = t + step * MINUTE;
    const lc = localWeekMinute(cand, tz);
    if (lc === (lm + step) % WEEK_MIN) {
      // same offset: local time advanced minute by minute, the value flips only at a flip of the pattern
      if (p.open[lc] !== v0) return cand <= limit ? cand : undefined;
      t = cand;
      lm = lc;
      continue;
    }
    // the offset changed in (t, cand]: find the first minute with the new offset
    let lo = t;
    let hi = cand;
    while (hi - lo > MINUTE) {
      const mid = lo + Math.floor((hi - lo) / MINUTE / 2) * MINUTE;
      if (offsetAt(mid, tz) === off) lo = mid;
      else hi = mid;
    }
    const lh = localWeekMinute(hi, tz);
    // before `hi` the offset was `off` and no flip was reached (hi - t < d): the value was v0
    if (p.open[lh] !== v0) return hi <= limit ? hi : undefined;
    t = hi;
    lm = lh;
    off = mod(lh - utcWeekMinute(hi), WEEK_MIN);
  }
  return undefined;
}

/** Index of the first open window at `at` (a queue's open window: `openWindow` in quota-config.ts), or -1. */
export function openIndex(ws: readonly TimeWindowSpec[], at: number): number {
  for (let i = 0; i < ws.length; i++) if (windowOpen(ws[i] as TimeWindowSpec, at)) return i;
  return -1;
}

/**
 * The first instant after `after` at which the open window of one of these queues (each given by
 * its `timeWindows`) changes — a window opens, closes, or another one takes over — or undefined
 * when none changes within `WINDOW_LOOKAHEAD_MS`.
 */
export function nextWindowChange(
  queues: Iterable<readonly TimeWindowSpec[]>,
  after: number,
): number | undefined {
  const limit = after + WINDOW_LOOKAHEAD_MS;
  let best: number | undefined;
  for (const ws of queues) {
    if (ws.length === 0) continue;
    const cur = openIndex(ws, after);
    let t = after;
    for (;;) {
      // the next flip of any of the queue's windows; the queue's change is at one of those
      let c: number | undefined;
      const bound = best ?? limit;
      for (const w of ws) {
        const f = nextWindowFlip(w, t, bound);
        if (f !== undefined && (c === undefined || f < c)) c = f;
      }
      if (c === undefined) break;
      if (openIndex(ws, c) !== cur) {
        best = c;
        break;
      }
      t = c;
    }
  }
  return best;
}

/** Last answer per core state: valid while the queues' windows are the same and `after` stays in [from, until). */
interface ChangeMemo {
  windows: (readonly TimeWindowSpec[])[];
  from: number;
  until: number;
  at: number | undefined;
}
const memos = new WeakMap<CoreState, ChangeMemo>();

/**
 * `nextWindowChange` over the core's queues with windows (the façade's `Scheduler.nextWindowChange`).
 * Remembered: asked again with a later `after` before that change (the simulator asks at every
 * event), it answers without looking at a zone again.
 */
export function nextQueueWindowChange(core: CoreState, after: number): number | undefined {
  if (core.windowQueues.size === 0) return undefined;
  const windows: (readonly TimeWindowSpec[])[] = [];
  for (const q of core.windowQueues) windows.push(q.spec.timeWindows ?? []);
  const m = memos.get(core);
  if (
    m &&
    after >= m.from &&
    after < m.until &&
    m.windows.length === windows.length &&
    m.windows.every((w, i) => w === windows[i])
  )
    return m.at;
  const at = nextWindowChange(windows, after);
  // no change within the look-ahead means none at all (weekly patterns); re-checked after a week
  memos.set(core, { windows, from: after, until: at ?? after + 7 * DAY_MIN * MINUTE, at });
  return at;
}
