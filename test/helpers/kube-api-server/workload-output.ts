/**
 * What a test workload writes to its log (pod-logs.ts), as the kubelet runs it: a start line, then what its
 * first container's environment (or the pod's annotation) asks:
 * - FAIRWAY_TEST_LOG_LINES (`fairway.dev/test-log-lines`): that many lines at once as it starts (one write:
 *   one timestamp for all);
 * - FAIRWAY_TEST_LOG_EVERY_MS (`fairway.dev/test-log-every-ms`): one more line that often while it runs,
 *   also while it handles SIGTERM;
 * - FAIRWAY_TEST_LOG_TEXT (`fairway.dev/test-log-text`): those lines' text, `{n}` their number from 1
 *   (default `step {n}`);
 * then `received SIGTERM` when signalled, and a last line by how it ended: `done` (0), `Error: the test
 * workload failed (exit code 1)`, `exiting on SIGTERM` (143); nothing when it was killed (137, OOMKilled).
 */
import { type Cluster, workloadSetting } from './cluster.js';

const LOG_LINES = 'fairway.dev/test-log-lines';
const LOG_EVERY_MS = 'fairway.dev/test-log-every-ms';
const LOG_TEXT = 'fairway.dev/test-log-text';

export class WorkloadOutput {
  /** Pod uid → when its next periodic line is due, and its number. */
  private readonly next = new Map<string, { at: number; n: number; everyMs: number }>();

  constructor(private readonly c: Pick<Cluster, 'logs' | 'due'>) {}

  private text(pod: any, n: number): string {
    return (workloadSetting(pod, LOG_TEXT, 'FAIRWAY_TEST_LOG_TEXT') ?? 'step {n}').replaceAll(
      '{n}',
      String(n),
    );
  }

  private main(pod: any): string {
    return pod.spec.containers[0].name;
  }

  /** Its containers started (again, after a restart). */
  started(pod: any, now: number): void {
    for (const c of pod.spec.containers ?? []) this.c.logs.started(pod, c.name);
    const main = pod.spec.containers[0];
    const command = [...(main.command ?? []), ...(main.args ?? [])].join(' ');
    this.c.logs.write(pod, main.name, `starting ${command || main.image}\n`);
    const burst = Number(workloadSetting(pod, LOG_LINES, 'FAIRWAY_TEST_LOG_LINES') ?? 0);
    const lines = Array.from({ length: Math.max(0, burst) }, (_v, i) => `${this.text(pod, i + 1)}\n`);
    if (lines.length) this.c.logs.write(pod, main.name, lines.join(''));
    const everyMs = Number(workloadSetting(pod, LOG_EVERY_MS, 'FAIRWAY_TEST_LOG_EVERY_MS') ?? 0);
    if (everyMs > 0) {
      this.next.set(pod.metadata.uid, { at: now + everyMs, n: lines.length + 1, everyMs });
      this.c.due(now + everyMs, now);
    }
  }

  /** While it runs: the periodic lines that are due (each its own write). */
  tick(pod: any, now: number): void {
    const next = this.next.get(pod.metadata.uid);
    if (!next) return;
    for (; next.at <= now; next.at += next.everyMs)
      this.c.logs.write(pod, this.main(pod), `${this.text(pod, next.n++)}\n`);
    this.c.due(next.at, now);
  }

  sigterm(pod: any): void {
    this.c.logs.write(pod, this.main(pod), 'received SIGTERM\n');
  }

  /** Its containers ended with this exit code (137: killed, nothing more written). */
  ended(pod: any, exitCode: number, reason: string): void {
    // A container in back-off has no process to write anything.
    if (!this.c.logs.running(pod, this.main(pod))) return void this.next.delete(pod.metadata.uid);
    const last =
      exitCode === 0
        ? 'done'
        : exitCode === 1
          ? 'Error: the test workload failed (exit code 1)'
          : exitCode === 143
            ? 'exiting on SIGTERM'
            : reason === 'OOMKilled' || exitCode === 137
              ? null
              : `exited with code ${exitCode}`;
    if (last) this.c.logs.write(pod, this.main(pod), `${last}\n`);
    for (const c of pod.spec.containers ?? []) this.c.logs.ended(pod, c.name);
    this.next.delete(pod.metadata.uid);
  }

  forget(uid: string): void {
    this.next.delete(uid);
  }
}
