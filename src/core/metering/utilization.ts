// GPU utilization samples of running jobs, kept until the ledger charges the time they cover.
// In memory on the replica that receives the backend's reports: after a failover the interval
// in flight has no samples, and its rows say so (usedGpuSeconds null) rather than guess.

export interface UtilizationSource {
  /** Mean of the samples taken in [from, to] (ms), forgetting those up to `to`; null when none. */
  take(jobId: string, from: number, to: number): number | null;
}

export class UtilizationSamples implements UtilizationSource {
  private readonly samples = new Map<string, { at: number; value: number }[]>();

  /** At most this many samples per job are kept (a job never charged still stays bounded). */
  constructor(private readonly maxPerJob = 10_000) {}

  record(jobId: string, at: number, value: number): void {
    if (!Number.isFinite(value)) return;
    const list = this.samples.get(jobId) ?? [];
    list.push({ at, value: Math.min(1, Math.max(0, value)) });
    if (list.length > this.maxPerJob) list.splice(0, list.length - this.maxPerJob);
    this.samples.set(jobId, list);
  }

  take(jobId: string, from: number, to: number): number | null {
    const list = this.samples.get(jobId);
    if (!list) return null;
    let sum = 0;
    let n = 0;
    for (const s of list) {
      if (s.at >= from && s.at <= to) {
        sum += s.value;
        n++;
      }
    }
    const rest = list.filter((s) => s.at > to);
    if (rest.length) this.samples.set(jobId, rest);
    else this.samples.delete(jobId);
    return n ? sum / n : null;
  }

  /** The job ended: its remaining samples are of no use. */
  forget(jobId: string): void {
    this.samples.delete(jobId);
  }
}
