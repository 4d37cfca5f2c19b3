// Time-window quotas in the replay: the virtual clock stops where a window opens or closes, so
// admissions at an opening and window-closed reclaims at a closing happen at that instant.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ReplayMetrics } from '../../src/simulator/metrics.js';
import { parseQueues, queueAt } from '../../src/simulator/queues.js';
import { runReplay } from '../../src/simulator/replay.js';
import type { ReplayReport } from '../../src/simulator/report.js';
import { loadInput, type SimulateOptions, simulate } from '../../src/simulator/run.js';

const fx = (f: string): string => join(import.meta.dirname, 'fixtures', f);
const H = 3_600_000;
// Monday 2026-01-05; Berlin is UTC+1 in January, so the window 08:00–18:00 is 07:00–17:00Z
const mon = (h: number): number => Date.UTC(2026, 0, 5, h);

const opts: SimulateOptions = {
  trace: fx('window-trace.csv'),
  cluster: fx('window-cluster.csv'),
  queues: fx('window-queues.json'),
  policies: ['fairway', 'static', 'fifo'],
  placements: ['best-fit'],
  mode: 'replay',
  seed: 1,
  windowEnd: 'last-finish',
};

describe('a weekday daytime window (8 GPUs; day: 0 by night, 4 by day; batch: 8 by night, 4 by day)', () => {
  const input = loadInput(opts);
  const report = simulate(opts, input).report as ReplayReport;
  const run = (p: string): ReplayMetrics => report.runs.find((r) => r.policy === p)!;

  it('fairway: d1 starts when the window opens, d2 is reclaimed (window-closed) when it closes and restarts at the next opening', () => {
    const o = runReplay(input, { policy: 'fairway', placement: 'best-fit' });
    const start = Object.fromEntries(o.jobs.map((j) => [j.id, j.firstStartMs]));
    // d1 waits for the opening at 07:00Z although no submit or finish happens then
    expect(start).toEqual({ d1: mon(7), b1: mon(6), d2: mon(12), b2: mon(17) });
    expect(o.preemptions.map((p) => [p.victimId, p.preemptorId, p.reason, p.at, p.lostGpuMs])).toEqual([
      ['d2', 'b2', 'window-closed', mon(17), 4 * 5 * H],
    ]);
    // d2 waits (WindowClosed) for Tuesday's opening and runs its 8 h again from zero
    const d2 = o.segments.filter((s) => o.jobs[s.job]!.id === 'd2').map((s) => [s.start, s.end, s.preempted]);
    expect(d2).toEqual([
      [mon(12), mon(17), true],
      [mon(24 + 7), mon(24 + 15), false],
    ]);
    expect(o.endMs).toBe(mon(24 + 15));
  });

  it('fairway figures: one window-closed preemption losing 20 GPU-hours, waits of one hour', () => {
    const m = run('fairway');
    expect(m.preemptions).toMatchObject({ count: 1, byReason: { 'window-closed': { count: 1 } } });
    expect(m.preemptions.gpuHoursLost).toBeCloseTo(20, 6);
    expect(m.preemptions.byReason['window-closed']!.gpuHoursLost).toBeCloseTo(20, 6);
    expect(m.tenants.find((t) => t.tenant === 'D')!.preemptionsSuffered.count).toBe(1);
    // waits: b1 0, d2 0, d1 1 h (the opening), b2 1 h (the closing)
    expect(m.waitSeconds).toMatchObject({ p50: 0, p99: 3600 });
    // held: b1 4×20 + d1 4×3 + d2 4×5 (lost) + 4×8 + b2 4×2 = 152 GPU-h of 8 GPUs × 33 h
    expect(m.window.hours).toBeCloseTo(33, 6);
    expect(m.allocationRatio).toBeCloseTo(152 / 264, 6);
    expect(m.usefulAllocationRatio).toBeCloseTo(132 / 264, 6);
    // SLA eligibility uses the nominal of the moment: d1 (night, day nominal 0) and b2 (day,
    // batch nominal 4 held by b1) are not eligible; b1 and d2 are and start at once
    expect(m.sla).toEqual({ eligible: 2, met: 2, attainment: 1 });
  });

  it('static applies the windows without reclaim: b2 waits for d2 to finish; fifo ignores them', () => {
    const s = run('static');
    expect(s.preemptions.count).toBe(0);
    // d1 still waits for the opening (1 h); b2 gets batch's night nominal at 17:00Z but no nodes until 20:00Z
    expect(s.waitSeconds).toMatchObject({ p99: 4 * 3600 });
    expect(s.tenants.find((t) => t.tenant === 'D')!.waitSeconds.p99).toBe(3600);
    const f = run('fifo');
    expect(f.preemptions.count).toBe(0);
    expect(f.tenants.find((t) => t.tenant === 'D')!.waitSeconds.p99).toBe(0);
    expect(f.waitSeconds.p99).toBe(4 * 3600);
  });

  it('the queues file takes timeWindows (checked: times, zones, days) and queueAt lays the open one over the base quotas', () => {
    const q = input.queues.queues[0]!;
    expect(queueAt(q, mon(6)).quotas).toEqual({ gpu: { gpu: { nominal: 0, borrowingLimit: 0 } } });
    expect(queueAt(q, mon(7)).quotas).toEqual({ gpu: { gpu: { nominal: 4, borrowingLimit: 0 } } });
    expect(queueAt(q, mon(24 * 5 + 10)).quotas.gpu!.gpu!.nominal).toBe(0); // Saturday
    const bad = (w: string): string => `queues:\n  - name: q\n    timeWindows:\n      - {${w}}\n`;
    const ok = 'days: [1], start: "08:00", end: "18:00", timeZone: UTC, quotas: {}';
    expect(parseQueues(bad(ok), 'q.yaml').queues[0]!.timeWindows).toEqual([
      { days: [1], start: '08:00', end: '18:00', timeZone: 'UTC', quotas: {} },
    ]);
    expect(() => parseQueues(bad(ok.replace('"18:00"', '"25:00"')), 'q.yaml')).toThrow(
      /q\.yaml:4: queues\[0\]\.timeWindows\[0\]\.end: must be a time 'HH:MM'/,
    );
    expect(() => parseQueues(bad(ok.replace('UTC', 'Mars/Olympus')), 'q.yaml')).toThrow(
      /timeWindows\[0\]\.timeZone: 'Mars\/Olympus' is not an IANA time zone/,
    );
    expect(() => parseQueues(bad(ok.replace('[1]', '[7]')), 'q.yaml')).toThrow(/timeWindows\[0\]\.days\[0\]/);
  });
});
