// The Kubernetes backend archives the output of the runs it runs as their pods end ('pod-log'
// events): once per pod when its container exits, with the grace period's lines when it is preempted
// (suspended), and only the last `logArchiveBytes` of lines (truncated) of a longer output.
import { afterEach, describe, expect, it } from 'vitest';
import type { BackendEvent } from '../../../src/backends/port.js';
import { admitted, allRunning, eventually, type LogCluster, startLogCluster } from './log-fixtures.js';

let c: LogCluster | null = null;
afterEach(async () => {
  await c?.close();
  c = null;
});

type PodLog = Extract<BackendEvent, { type: 'pod-log' }>;
const id = (n: number) => `0190f0a0-0000-7000-8000-0000000003${String(n).padStart(2, '0')}`;
const podLogs = (cluster: LogCluster, jobId: string) =>
  cluster.events.filter((e): e is PodLog => e.type === 'pod-log' && e.jobId === jobId);

describe('Kubernetes pod log archive', () => {
  it('reports each pod’s output once as it ends', async () => {
    c = await startLogCluster();
    const job = admitted(id(1), [{ name: 'workers', count: 2, gpu: 1 }], {
      FAIRWAY_TEST_LOG_LINES: '3',
      FAIRWAY_TEST_RUN_MS: '300',
    });
    await c.backend.start(job);
    await eventually(() => podLogs(c!, job.jobId).length === 2, 'two pod logs', 15_000);
    await eventually(() => c!.events.some((e) => e.type === 'succeeded'), 'succeeded');
    await new Promise((r) => setTimeout(r, 300));
    const logs = podLogs(c, job.jobId).sort((a, b) => a.pod.index - b.pod.index);
    expect(logs.map((l) => l.pod)).toEqual([
      { podSet: 'workers', index: 0 },
      { podSet: 'workers', index: 1 },
    ]);
    for (const log of logs) {
      expect(log).toMatchObject({ admissionAt: job.admission.at, truncated: false });
      expect(log.lines.map((l) => l.text)).toEqual([
        'starting python train.py',
        'step 1',
        'step 2',
        'step 3',
        'done',
      ]);
      expect(log.lines.every((l) => l.stream === null && typeof l.cursor === 'string')).toBe(true);
    }
  });

  it('follows a preempted pod through its grace period: its SIGTERM lines are archived', async () => {
    c = await startLogCluster();
    const job = admitted(id(2), [{ name: 'main', count: 1, gpu: 1 }], {
      FAIRWAY_TEST_LOG_EVERY_MS: '50',
      FAIRWAY_TEST_SIGTERM_MS: '400',
    });
    await c.backend.start(job);
    await allRunning(c.kube, job.jobId, 1);
    await new Promise((r) => setTimeout(r, 200));
    await c.backend.suspend(job.jobId, 'preempted');
    const [log] = await eventually(() => {
      const found = podLogs(c!, job.jobId);
      return found.length === 1 && found;
    }, 'the preempted pod’s log');
    const texts = log!.lines.map((l) => l.text);
    expect(texts[0]).toBe('starting python train.py');
    const sigterm = texts.indexOf('received SIGTERM');
    expect(sigterm).toBeGreaterThan(1);
    // Lines written while it stopped are there too, up to its exit.
    expect(texts.slice(sigterm + 1, -1).length).toBeGreaterThan(2);
    expect(texts.at(-1)).toBe('exiting on SIGTERM');
    expect(log!.truncated).toBe(false);
    await eventually(() => c!.events.some((e) => e.type === 'stopped'), 'stopped');
  });

  it('keeps only the last logArchiveBytes of lines of a longer output, and says so', async () => {
    c = await startLogCluster({ logArchiveBytes: 300 });
    const job = admitted(id(3), [{ name: 'main', count: 1, gpu: 1 }], {
      FAIRWAY_TEST_LOG_LINES: '200',
      FAIRWAY_TEST_LOG_TEXT: 'line {n}',
      FAIRWAY_TEST_RUN_MS: '200',
    });
    await c.backend.start(job);
    const [log] = await eventually(() => {
      const found = podLogs(c!, job.jobId);
      return found.length === 1 && found;
    }, 'the pod’s log');
    expect(log!.truncated).toBe(true);
    const texts = log!.lines.map((l) => l.text);
    expect(texts.at(-1)).toBe('done');
    expect(texts.reduce((n, t) => n + Buffer.byteLength(t) + 1, 0)).toBeLessThanOrEqual(300);
    expect(texts.length).toBeGreaterThan(20);
    // The last lines, in order, none left out in between.
    const numbers = texts.slice(0, -1).map((t) => Number(t.slice(5)));
    expect(numbers).toEqual(Array.from({ length: numbers.length }, (_v, i) => 201 - numbers.length + i));
  });
});
