// Time windows: is a weekly window open at an instant, in a named IANA time zone.
// Intl.DateTimeFormat is pure JS (no I/O); formatters are cached per zone.
import type { TimeWindowSpec } from './types.js';

const formatters = new Map<string, Intl.DateTimeFormat>();
const WEEKDAYS: Record<string, number> = { Sun: 0, Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6 };

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
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

/** A window whose end is at or before its start runs past midnight; `days` name the day it starts. */
export function windowOpen(w: TimeWindowSpec, at: number): boolean {
  const { day, minute } = localTime(at, w.timeZone);
  const start = parseClock(w.start);
  const end = parseClock(w.end);
  if (start < end) return w.days.includes(day) && minute >= start && minute < end;
  const prev = (day + 6) % 7;
  return (w.days.includes(day) && minute >= start) || (w.days.includes(prev) && minute < end);
}
