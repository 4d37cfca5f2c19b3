// The next instant a time window opens or closes (windows.ts `nextWindowChange`, the façade's
// `Scheduler.nextWindowChange`): across midnight, weekends, time zones and DST changes, checked
// against windowOpen evaluated minute by minute.
import { describe, expect, it } from 'vitest';
import type { TimeWindowSpec } from '../../../src/core/scheduling/index.js';
import { nextWindowChange, windowOpen } from '../../../src/core/scheduling/windows.js';
import { ManualClock, makeCluster, makeQueue, nodes } from '../builders.js';

const MIN = 60_000;
const win = (days: number[], start: string, end: string, timeZone: string): TimeWindowSpec => ({
  days,
  start,
  end,
  timeZone,
  quotas: {},
});
const weekdays = [1, 2, 3, 4, 5];

/** Every change in [from, to) by chaining nextWindowChange. */
function changes(queues: TimeWindowSpec[][], from: number, to: number): number[] {
  const out: number[] = [];
  for (let t = nextWindowChange(queues, from); t !== undefined && t < to; t = nextWindowChange(queues, t))
    out.push(t);
  return out;
}
/** Every change in (from, to) by evaluating windowOpen at each minute (the core's own rule). */
function scanned(queues: TimeWindowSpec[][], from: number, to: number): number[] {
  const idx = (ws: TimeWindowSpec[], t: number): number => ws.findIndex((w) => windowOpen(w, t));
  const out: number[] = [];
  let prev = queues.map((ws) => idx(ws, from));
  for (let t = Math.floor(from / MIN) * MIN + MIN; t < to; t += MIN) {
    const cur = queues.map((ws) => idx(ws, t));
    if (cur.some((v, i) => v !== prev[i])) out.push(t);
    prev = cur;
  }
  return out;
}

describe('nextWindowChange', () => {
  it('weekday office hours in Berlin across the spring-forward weekend (CET → CEST)', () => {
    const office = [[win(weekdays, '08:00', '20:00', 'Europe/Berlin')]];
    // Friday 2026-03-27 20:00 CET = 19:00 UTC closes; DST starts Sunday 29 March at 01:00 UTC;
    // Monday 08:00 CEST = 06:00 UTC opens (one hour earlier in UTC than the week before)
    expect(nextWindowChange(office, Date.UTC(2026, 2, 27, 12, 0))).toBe(Date.UTC(2026, 2, 27, 19, 0));
    expect(nextWindowChange(office, Date.UTC(2026, 2, 27, 19, 0))).toBe(Date.UTC(2026, 2, 30, 6, 0));
    expect(nextWindowChange(office, Date.UTC(2026, 2, 20, 19, 0))).toBe(Date.UTC(2026, 2, 23, 7, 0));
    // mid-minute: the change is at the start of the next minute boundary, strictly after
    expect(nextWindowChange(office, Date.UTC(2026, 2, 30, 5, 59, 30))).toBe(Date.UTC(2026, 2, 30, 6, 0));
  });

  it('a window inside the DST gap opens when the clock jumps into it; one in the repeated hour opens twice', () => {
    // Berlin, Sunday 2026-03-29: 02:00 CET jumps to 03:00 CEST at 01:00 UTC; 02:30–04:00 is open from the
    // jump
    const gap = [[win([0], '02:30', '04:00', 'Europe/Berlin')]];
    expect(changes(gap, Date.UTC(2026, 2, 28, 0, 0), Date.UTC(2026, 2, 30))).toEqual([
      Date.UTC(2026, 2, 29, 1, 0),
      Date.UTC(2026, 2, 29, 2, 0),
    ]);
    // Sunday 2026-10-25: 03:00 CEST falls back to 02:00 CET at 01:00 UTC, so 02:15–02:45 happens twice
    const rep = [[win([0], '02:15', '02:45', 'Europe/Berlin')]];
    expect(changes(rep, Date.UTC(2026, 9, 24, 0, 0), Date.UTC(2026, 9, 26))).toEqual([
      Date.UTC(2026, 9, 25, 0, 15),
      Date.UTC(2026, 9, 25, 0, 45),
      Date.UTC(2026, 9, 25, 1, 15),
      Date.UTC(2026, 9, 25, 1, 45),
    ]);
  });

  it('equals a minute-by-minute scan over DST changes, zones with half-hour offsets, overnight windows and several queues', () => {
    const queues: TimeWindowSpec[][] = [
      [win(weekdays, '08:00', '20:00', 'America/New_York')],
      // two windows: the first open one counts (a change of index is a change)
      [
        win([5, 6], '22:00', '06:00', 'Australia/Adelaide'),
        win([0, 1, 2, 3, 4, 5, 6], '00:00', '12:00', 'Australia/Adelaide'),
      ],
      [win([0], '01:30', '02:30', 'Europe/London'), win([3], '23:30', '24:00', 'Asia/Kolkata')],
    ];
    // US DST starts 2026-03-08; London's 2026-03-29; Adelaide's ends 2026-04-05 (and a Wednesday)
    for (const [from, to] of [
      [Date.UTC(2026, 2, 7), Date.UTC(2026, 2, 9, 18)],
      [Date.UTC(2026, 2, 28), Date.UTC(2026, 2, 30)],
      [Date.UTC(2026, 3, 3, 12), Date.UTC(2026, 3, 5, 12)],
      [Date.UTC(2026, 3, 8, 12), Date.UTC(2026, 3, 9)],
    ] as const) {
      const got = changes(queues, from, to);
      expect(got.length).toBeGreaterThan(2);
      expect(got).toEqual(scanned(queues, from, to));
    }
  });

  it('windows that never change give undefined; the façade answers for its queues and remembers', () => {
    expect(nextWindowChange([[win([0, 1, 2, 3, 4, 5, 6], '00:00', '24:00', 'UTC')]], 0)).toBeUndefined();
    expect(nextWindowChange([[win([], '08:00', '20:00', 'UTC')]], 0)).toBeUndefined();
    expect(nextWindowChange([], 0)).toBeUndefined();
    const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0)); // Monday 13:00 in Berlin
    const w = {
      ...win(weekdays, '08:00', '20:00', 'Europe/Berlin'),
      quotas: { h100: { gpu: { nominal: 8 } } },
    };
    const { s } = makeCluster({
      clock,
      nodes: nodes(1),
      queues: [makeQueue('a').nominal('h100', 2).window(w), makeQueue('b').nominal('h100', 2)],
    });
    expect(s.nextWindowChange(clock.t)).toBe(Date.UTC(2026, 0, 5, 19, 0));
    expect(s.nextWindowChange(Date.UTC(2026, 0, 5, 18, 0))).toBe(Date.UTC(2026, 0, 5, 19, 0)); // from the memo
    expect(s.nextWindowChange(Date.UTC(2026, 0, 5, 19, 0))).toBe(Date.UTC(2026, 0, 6, 7, 0));
    // a queue change is seen at once
    s.upsertQueue({ name: 'a', tenant: 't-a', quotas: { h100: { gpu: { nominal: 2 } } } });
    expect(s.nextWindowChange(Date.UTC(2026, 0, 5, 18, 0))).toBeUndefined();
  });

  it('is cheap enough to ask at every event', () => {
    const queues = [
      [win(weekdays, '08:00', '20:00', 'Europe/Berlin')],
      [win([6, 0], '00:00', '24:00', 'America/Los_Angeles')],
    ];
    let t0 = performance.now();
    let n = 0;
    for (let t = Date.UTC(2026, 0, 1); t < Date.UTC(2026, 1, 1); t += 3 * 3_600_000)
      if (nextWindowChange(queues, t) !== undefined) n++;
    expect(n).toBe(248);
    // cold look-ups cost a few dozen Intl calls (~0.6 ms here); generous bound for a loaded machine
    expect(performance.now() - t0).toBeLessThan(2500);
    // the façade remembers: 20,000 asks at events between two changes cost a comparison each
    const clock = new ManualClock(Date.UTC(2026, 0, 5, 8, 0));
    const w = {
      ...win(weekdays, '08:00', '20:00', 'Europe/Berlin'),
      quotas: { h100: { gpu: { nominal: 8 } } },
    };
    const { s } = makeCluster({
      clock,
      nodes: nodes(1),
      queues: [makeQueue('a').nominal('h100', 2).window(w)],
    });
    t0 = performance.now();
    let same = 0;
    for (let i = 0; i < 20_000; i++)
      if (s.nextWindowChange(Date.UTC(2026, 0, 5, 8, 0) + i * 1000) === Date.UTC(2026, 0, 5, 19, 0)) same++;
    expect(same).toBe(20_000);
    expect(performance.now() - t0).toBeLessThan(2500);
  });
});
