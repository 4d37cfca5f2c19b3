// The Kubernetes backend's job logs (port.ts BackendLogs) against the test API server: a run's pods
// by pod set and index (a batch gang, a JobSet), reads with tail and after a cursor (equal timestamps
// included), a follow to the end and one across a cut connection (every line once, in order), invalid
// UTF-8 replaced, and another tenant's pod of the same name and labels never read.
import { afterEach, describe, expect, it } from 'vitest';
import type { BackendLogLine, BackendLogPod, BackendLogRun } from '../../../src/backends/port.js';
import {
  AURORA_NS,
  admitted,
  allRunning,
  BOREALIS,
  BOREALIS_NS,
  eventually,
  type LogCluster,
  runOf,
  startLogCluster,
} from './log-fixtures.js';

let c: LogCluster | null = null;
afterEach(async () => {
  await c?.close();
  c = null;
});

const texts = (lines: BackendLogLine[] | null) => (lines ?? []).map((l) => l.text);
const id = (n: number) => `0190f0a0-0000-7000-8000-0000000001${String(n).padStart(2, '0')}`;

function followAll(
  cluster: LogCluster,
  run: BackendLogRun,
  pod: BackendLogPod,
  after: string | null,
): { lines: BackendLogLine[]; ended: Promise<void>; stop: () => void } {
  const lines: BackendLogLine[] = [];
  let stop: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => {
    stop = cluster.backend.logs.follow(run, pod, after, {
      lines: (batch) => lines.push(...batch),
      end: resolve,
    });
  });
  return { lines, ended, stop };
}

describe('Kubernetes job logs', () => {
  it('names a gang’s pods by pod set and index, reads with tail and after a cursor, and follows to the end', async () => {
    c = await startLogCluster();
    const job = admitted(id(1), [{ name: 'workers', count: 2, gpu: 1 }], {
      FAIRWAY_TEST_LOG_LINES: '10',
      FAIRWAY_TEST_LOG_TEXT: 'epoch {n}',
      FAIRWAY_TEST_RUN_MS: '1000',
    });
    await c.backend.start(job);
    await allRunning(c.kube, job.jobId, 2);
    const run = runOf(job);
    expect(await c.backend.logs.pods(run)).toEqual([
      { podSet: 'workers', index: 0 },
      { podSet: 'workers', index: 1 },
    ]);
    const pod = { podSet: 'workers', index: 1 };
    const all = (await c.backend.logs.read(run, pod, {}))!;
    expect(texts(all).slice(0, 11)).toEqual([
      'starting python train.py',
      ...Array.from({ length: 10 }, (_v, i) => `epoch ${i + 1}`),
    ]);
    // The ten lines of the burst share a timestamp; their cursors still differ and sort in order.
    expect(new Set(all.slice(1, 11).map((l) => l.at)).size).toBe(1);
    expect(new Set(all.map((l) => l.cursor)).size).toBe(all.length);
    // A tail that begins inside the burst gives those lines the cursors a whole read gives them.
    const tail = (await c.backend.logs.read(run, pod, { tailLines: 3 }))!;
    const upTo = (await c.backend.logs.read(run, pod, {}))!;
    const byText = new Map(upTo.map((l) => [l.text, l.cursor]));
    for (const line of tail) expect(line.cursor).toBe(byText.get(line.text));
    const inBurst = all[4]!; // epoch 4
    const burstTail = all.slice(0, 11);
    expect(texts(await c.backend.logs.read(run, pod, { after: inBurst.cursor })).slice(0, 6)).toEqual(
      texts(burstTail.slice(5)),
    );
    expect(texts(await c.backend.logs.read(run, pod, { after: inBurst.cursor, tailLines: 2 }))).toHaveLength(
      2,
    );
    const followed = followAll(c, run, pod, inBurst.cursor);
    await followed.ended;
    expect(texts(followed.lines)).toEqual([...texts(burstTail.slice(5)), 'done']);
    // Read again once the pod ended: the same lines, with the same cursors.
    const final = (await c.backend.logs.read(run, pod, { after: inBurst.cursor }))!;
    expect(final.map((l) => l.cursor)).toEqual(followed.lines.map((l) => l.cursor));
  });

  it('resumes a follow across cut connections: every line exactly once, in order', async () => {
    c = await startLogCluster();
    const job = admitted(id(2), [{ name: 'main', count: 1, gpu: 1 }], {
      FAIRWAY_TEST_LOG_EVERY_MS: '5',
      FAIRWAY_TEST_RUN_MS: '4000',
      FAIRWAY_TEST_LOG_TEXT: 'line {n}',
    });
    await c.backend.start(job);
    await allRunning(c.kube, job.jobId, 1);
    const followed = followAll(c, runOf(job), { podSet: 'main', index: 0 }, null);
    for (let cut = 0; cut < 3; cut++) {
      await eventually(() => c!.kube.openLogStreams === 1, 'a follow stream');
      await new Promise((r) => setTimeout(r, 150));
      expect(c.kube.cutLogStreams()).toBe(1);
    }
    await followed.ended;
    const got = texts(followed.lines);
    const numbers = got.filter((t) => t.startsWith('line ')).map((t) => Number(t.slice(5)));
    expect(numbers.length).toBeGreaterThan(50);
    expect(numbers).toEqual(Array.from({ length: numbers.length }, (_v, i) => i + 1));
    expect(got[0]).toBe('starting python train.py');
    expect(got.at(-1)).toBe('done');
    const whole = (await c.backend.logs.read(runOf(job), { podSet: 'main', index: 0 }, {}))!;
    expect(followed.lines.map((l) => l.cursor)).toEqual(whole.map((l) => l.cursor));
  });

  it('replaces invalid UTF-8, keeps very long lines bounded, and returns null for a pod that is gone', async () => {
    c = await startLogCluster();
    const job = admitted(id(3), [{ name: 'main', count: 1, gpu: 1 }], {});
    await c.backend.start(job);
    const [pod] = await allRunning(c.kube, job.jobId, 1);
    c.kube.writeLog(AURORA_NS, pod.metadata.name, Buffer.from([0x6f, 0x6b, 0x20, 0xc3, 0x28, 0xff, 0x0a]));
    c.kube.writeLog(AURORA_NS, pod.metadata.name, `${'x'.repeat(200_000)}\nafter\n`);
    const run = runOf(job);
    const lines = (await c.backend.logs.read(run, { podSet: 'main', index: 0 }, {}))!;
    expect(lines[1]!.text).toBe('ok \uFFFD(\uFFFD');
    expect(lines[2]!.text.length).toBeGreaterThan(60_000);
    expect(lines[2]!.text.length).toBeLessThan(200_000);
    expect(lines[3]!.text).toBe('after');
    expect(await c.backend.logs.read(run, { podSet: 'main', index: 7 }, {})).toBeNull();
    await c.backend.cancel(job.jobId);
    await eventually(async () => (await c!.backend.logs.pods(run)).length === 0, 'the pod gone', 15_000);
    expect(await c.backend.logs.read(run, { podSet: 'main', index: 0 }, {})).toBeNull();
  });

  it('never reads another tenant’s pod of the same name and labels', async () => {
    c = await startLogCluster();
    const job = admitted(id(4), [{ name: 'main', count: 1, gpu: 1 }], {});
    await c.backend.start(job);
    const [ours] = await allRunning(c.kube, job.jobId, 1);
    // The same pod, by hand, in Borealis's namespace: same name, labels and admission.
    const { name, labels, annotations } = ours.metadata;
    const spec = structuredClone(ours.spec);
    for (const field of ['nodeName', 'schedulingGates', 'nodeSelector', 'priority', 'preemptionPolicy'])
      delete spec[field];
    spec.containers[0].resources = { limits: { cpu: '1', memory: '1Gi' } };
    c.kube.put({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: BOREALIS_NS, labels, annotations },
      spec,
    });
    await eventually(
      () => c!.kube.get('Pod', BOREALIS_NS, name)?.status?.phase === 'Running',
      'the other tenant’s pod running',
    );
    c.kube.writeLog(BOREALIS_NS, name, 'borealis secret\n');
    const run = runOf(job);
    await eventually(async () => (await c!.backend.logs.pods(run)).length === 1, 'our pod only');
    const read = texts(await c.backend.logs.read(run, { podSet: 'main', index: 0 }, {}));
    expect(read).toEqual(['starting python train.py']);
    // Borealis's run of the same job id sees its own pod only, and Aurora's is never it.
    const theirs = runOf(job, { tenant: BOREALIS.id });
    expect(texts(await c.backend.logs.read(theirs, { podSet: 'main', index: 0 }, {}))).toEqual([
      'starting python train.py',
      'borealis secret',
    ]);
    const followed = followAll(c, run, { podSet: 'main', index: 0 }, null);
    await eventually(() => followed.lines.length > 0, 'the followed line');
    c.kube.writeLog(BOREALIS_NS, name, 'more borealis\n');
    c.kube.writeLog(AURORA_NS, name, 'more aurora\n');
    await eventually(() => followed.lines.length === 2, 'the next line');
    followed.stop();
    expect(texts(followed.lines)).toEqual(['starting python train.py', 'more aurora']);
  });

  it('names a JobSet’s pods by pod set and completion index and reads each', async () => {
    c = await startLogCluster({ crds: true });
    const job = admitted(
      id(5),
      [
        { name: 'workers', count: 2, gpu: 1 },
        { name: 'Param Server', count: 1, gpu: 0 },
      ],
      { FAIRWAY_TEST_LOG_TEXT: 'from {n}', FAIRWAY_TEST_LOG_LINES: '1' },
      { workloadKind: 'JOBSET' },
    );
    await c.backend.start(job);
    await allRunning(c.kube, job.jobId, 3);
    const run = runOf(job);
    expect(await c.backend.logs.pods(run)).toEqual([
      { podSet: 'workers', index: 0 },
      { podSet: 'workers', index: 1 },
      { podSet: 'Param Server', index: 0 },
    ]);
    const ps = await c.backend.logs.read(run, { podSet: 'Param Server', index: 0 }, {});
    expect(texts(ps)).toEqual(['starting python train.py', 'from 1']);
    const pods = c.kube.objects('Pod', AURORA_NS);
    const second = pods.find(
      (p) =>
        p.metadata.labels['fairway.dev/pod-set'] === 'workers' &&
        p.metadata.annotations['batch.kubernetes.io/job-completion-index'] === '1',
    );
    c.kube.writeLog(AURORA_NS, second.metadata.name, 'rank 1\n');
    expect(texts(await c.backend.logs.read(run, { podSet: 'workers', index: 1 }, { tailLines: 1 }))).toEqual([
      'rank 1',
    ]);
  });
});
