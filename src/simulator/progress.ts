// Progress of `fairway simulate` on stderr: a redrawn bar on a terminal, a plain line at most
// every few seconds otherwise (CI logs, pipes). stdout carries only the report.
import cliProgress from 'cli-progress';
import type { RunProgress } from './run.js';

export interface ProgressDisplay {
  update(p: RunProgress): void;
  /** The current run ended: clear the bar (the run's timing line follows). */
  runDone(): void;
}

export const NO_PROGRESS: ProgressDisplay = { update: () => undefined, runDone: () => undefined };

/** How long is left, from the fraction done after `elapsedMs`; null before anything is done. */
export function etaSeconds(fraction: number, elapsedMs: number): number | null {
  if (!(fraction > 0)) return null;
  return Math.max(0, (elapsedMs * (1 - fraction)) / fraction / 1000);
}

function formatSeconds(s: number | null): string {
  if (s === null) return '?';
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

const runName = (p: RunProgress) => `${p.mode} ${p.policy}/${p.placement}`;

/**
 * Plain lines for a stderr that is not a terminal: at most one per `intervalMs` (the first
 * one `intervalMs` after the start, so a short run prints none), each complete in itself.
 */
export function lineProgress(
  write: (line: string) => void,
  options: { intervalMs?: number; now?: () => number } = {},
): ProgressDisplay {
  const intervalMs = options.intervalMs ?? 5000;
  const now = options.now ?? (() => performance.now());
  let lastLine = now();
  // Rate and ETA are measured from a run's first callback (its start is not reported), so
  // that callback only sets the baseline.
  let run = '';
  let base = { t: 0, jobs: 0, fraction: 0 };
  return {
    update(p) {
      const t = now();
      if (runName(p) !== run) {
        run = runName(p);
        base = { t, jobs: p.jobs, fraction: p.fraction };
        if (intervalMs > 0) return;
      }
      if (t - lastLine < intervalMs) return;
      lastLine = t;
      const elapsedMs = t - base.t;
      const rate = elapsedMs > 0 ? Math.round(((p.jobs - base.jobs) * 1000) / elapsedMs) : 0;
      const eta =
        p.fraction > base.fraction
          ? etaSeconds((p.fraction - base.fraction) / (1 - base.fraction), elapsedMs)
          : null;
      write(
        `progress ${run}: ${(p.fraction * 100).toFixed(0)}% (${p.detail}), ${rate} jobs/s, ETA ${formatSeconds(eta)}`,
      );
    },
    runDone() {
      run = '';
    },
  };
}

/** A cli-progress bar redrawn in place on a terminal, one per run. */
export function barProgress(stream: NodeJS.WritableStream): ProgressDisplay {
  const scale = 1000;
  let bar: cliProgress.SingleBar | null = null;
  let run = '';
  let base = { t: 0, jobs: 0 };
  const stop = () => {
    bar?.stop();
    bar = null;
    run = '';
  };
  return {
    update(p) {
      const t = performance.now();
      if (runName(p) !== run) {
        stop();
        run = runName(p);
        base = { t, jobs: p.jobs };
        bar = new cliProgress.SingleBar(
          {
            stream,
            format: '{run} [{bar}] {percentage}% | {detail} | {rate} jobs/s | ETA {eta_formatted}',
            hideCursor: true,
            clearOnComplete: true,
            // the simulation is synchronous: no timer fires while it runs, so redraw from update()
            synchronousUpdate: true,
            fps: 5,
            etaBuffer: 50,
          },
          cliProgress.Presets.shades_classic,
        );
        bar.start(scale, Math.round(p.fraction * scale), { run, detail: p.detail, rate: 0 });
      }
      const elapsedMs = t - base.t;
      bar!.update(Math.round(p.fraction * scale), {
        run,
        detail: p.detail,
        rate: elapsedMs > 0 ? Math.round(((p.jobs - base.jobs) * 1000) / elapsedMs) : 0,
      });
    },
    runDone: stop,
  };
}
