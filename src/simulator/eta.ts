import type { SimJob } from './engine.js';
import { round6 } from './engine.js';
import { percentile } from './percentile.js';

/**
 * How good the ETA shown at submit was (docs/simulator.md, "ETA error"). The ETA is the
 * core's `explain(id).eta` once the cycles at the job's submit instant have settled, for
 * jobs still pending then; error = actual start − ETA, in seconds.
 */
export interface EtaStats {
  /** False when the run did not sample ETAs (no `--eta`): only the admitted/pending counts are filled. */
  sampled: boolean;
  /** Admitted at their submit instant: no ETA is shown, excluded from the error. */
  admittedAtSubmit: number;
  /** Still pending after the submit instant's cycles: an ETA (or "unknown") is shown. */
  pendingAtSubmit: number;
  /** Pending jobs the core gave a time. */
  withEta: number;
  /** Pending jobs whose ETA the core said it cannot know (null). */
  unknown: number;
  unknownByReason: Record<string, number>;
  /** With an ETA and started later: the jobs the error is measured on. */
  measured: number;
  /** With an ETA but never started in the run: excluded from the error. */
  neverStarted: number;
  /** |actual start − ETA| over `measured`, nearest rank (p99 and mean show the tail p90 hides). */
  absErrorSeconds: { p50: number | null; p90: number | null; p99: number | null; mean: number | null };
  /** Median of actual start − ETA: > 0 the ETA was optimistic (the job started later), < 0 pessimistic. */
  signedErrorSecondsP50: number | null;
  /** Started after / before / exactly at the ETA. */
  late: number;
  early: number;
  exact: number;
}

export function etaStats(jobs: readonly SimJob[], sampled: boolean): EtaStats {
  const byReason: Record<string, number> = {};
  const abs: number[] = [];
  const signed: number[] = [];
  const s = {
    admittedAtSubmit: 0,
    pendingAtSubmit: 0,
    withEta: 0,
    unknown: 0,
    measured: 0,
    neverStarted: 0,
    late: 0,
    early: 0,
    exact: 0,
  };
  for (const j of jobs) {
    if (j.rejected || j.pendingAfterSubmit === undefined) continue;
    if (!j.pendingAfterSubmit) {
      s.admittedAtSubmit++;
      continue;
    }
    s.pendingAtSubmit++;
    if (!sampled || j.etaAtSubmit === undefined) continue;
    if (j.etaAtSubmit === null) {
      s.unknown++;
      const r = j.etaUnknownReason ?? 'none';
      byReason[r] = (byReason[r] ?? 0) + 1;
      continue;
    }
    s.withEta++;
    if (j.startAfterEtaMs === null || j.startAfterEtaMs === undefined) {
      s.neverStarted++;
      continue;
    }
    s.measured++;
    const e = (j.startAfterEtaMs - j.etaAtSubmit) / 1000;
    signed.push(e);
    abs.push(Math.abs(e));
    if (e > 0) s.late++;
    else if (e < 0) s.early++;
    else s.exact++;
  }
  abs.sort((a, b) => a - b);
  signed.sort((a, b) => a - b);
  const r = (x: number | null): number | null => (x === null ? null : round6(x));
  const unknownByReason: Record<string, number> = {};
  for (const k of Object.keys(byReason).sort()) unknownByReason[k] = byReason[k]!;
  return {
    sampled,
    admittedAtSubmit: s.admittedAtSubmit,
    pendingAtSubmit: s.pendingAtSubmit,
    withEta: s.withEta,
    unknown: s.unknown,
    unknownByReason,
    measured: s.measured,
    neverStarted: s.neverStarted,
    absErrorSeconds: {
      p50: r(percentile(abs, 50)),
      p90: r(percentile(abs, 90)),
      p99: r(percentile(abs, 99)),
      mean: abs.length ? round6(abs.reduce((a, b) => a + b, 0) / abs.length) : null,
    },
    signedErrorSecondsP50: r(percentile(signed, 50)),
    late: s.late,
    early: s.early,
    exact: s.exact,
  };
}
