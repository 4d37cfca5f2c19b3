// The log follower in-process against a real gateway's database: a job preempted by the cluster
// and readmitted is followed across its two runs; a slow reader is ended (RATE_LIMITED) while a
// fast one on the same job gets every line; 500 followers of one job each get all its lines.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BackendLogLine, BackendLogs } from '../../../src/backends/port.js';
import { SimulatedBackend } from '../../../src/backends/simulated/simulated.js';
import { LogFanout } from '../../../src/services/logs/fanout.js';
import { followJobLogs, type LogBatch } from '../../../src/services/logs/follow.js';
import { startTestApp, type TestApp } from '../../helpers/harness.js';

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const STATE = `query($id: ID!) { node(id: $id) { ... on Job { state logs(tail: 10000) { run runs archived lines { run text } } } } }`;
const rawId = (id: string) => Buffer.from(id, 'base64').toString().split(':')[1]!;

async function until<T>(
  check: () => Promise<T | false | undefined> | T | false | undefined,
  what: string,
  ms = 20_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function collect(stream: AsyncIterable<LogBatch>): Promise<LogBatch[]> {
  const out: LogBatch[] = [];
  for await (const batch of stream) {
    out.push(batch);
    if (batch.ended) break;
  }
  return out;
}

describe('the log follower', () => {
  let t: TestApp;
  let member: string;
  let backend: SimulatedBackend;
  let fanout: LogFanout | undefined;
  const deps = () => ({
    orm: t.app.orm,
    logs: backend.logs,
    fanout: (fanout ??= new LogFanout(backend.logs)),
    events: t.app.events,
    bufferLines: 10_000,
    flushMs: 20,
    recheckMs: 200,
  });
  const submit = async (name: string, seconds: number) => {
    const res = await t.gql(member, SUBMIT, {
      in: {
        name,
        podSets: [{ name: 'main', gpusPerPod: 1 }],
        expectedDurationSeconds: seconds,
        checkpoint: { intervalSeconds: 60 },
        container: { image: 'nvcr.io/nvidia/pytorch:24.05-py3' },
      },
    });
    expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
    return res.body.data!.submitJob.id as string;
  };
  const stateOf = async (id: string) => (await t.gql(member, STATE, { id })).body.data!.node;

  beforeAll(async () => {
    t = await startTestApp({
      backend: () => (backend = new SimulatedBackend({ timeScale: 600, now: Date.now })),
    });
    member = t.token('aurora-research', 'MEMBER');
  });
  afterAll(() => t?.close());

  it('follows a job the cluster stopped into its second run, to the end; each run is read apart', async () => {
    const id = await submit('twice', 1200);
    await until(async () => (await stateOf(id)).state === 'RUNNING', 'running');
    const seen: LogBatch[] = [];
    const stream = (async () => {
      for await (const batch of followJobLogs(deps(), rawId(id), {})) {
        seen.push(batch);
        if (batch.ended) break;
      }
      return seen;
    })();
    await new Promise((r) => setTimeout(r, 400));
    expect(backend.disrupt(rawId(id), 'DisruptionTarget: the node was drained')).toBe(true);
    // Back to pending with its disruption backoff, on the scheduler's clock: let it pass.
    await until(async () => (await stateOf(id)).state === 'PENDING', 'requeued');
    t.now.value += 60_000;
    let timer: NodeJS.Timeout | undefined;
    const batches = await Promise.race([
      stream,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new Error(`not ended; last lines ${JSON.stringify(seen.flatMap((b) => b.lines).slice(-3))}`),
            ),
          15_000,
        );
      }),
    ]).finally(() => clearTimeout(timer));
    const lines = batches.flatMap((b) => b.lines);
    const runs = [...new Set(lines.map((l) => l.run))];
    expect(runs).toEqual([1, 2]);
    const first = lines.filter((l) => l.run === 1).map((l) => l.text);
    expect(first[0]).toMatch(/starting twice/);
    expect(first.at(-1)).toMatch(/received SIGTERM: saving checkpoint/);
    expect(lines.filter((l) => l.run === 2).at(-1)!.text).toMatch(/finished: \d+ steps, exit code 0/);
    expect(new Set(lines.map((l) => l.cursor)).size).toBe(lines.length);

    const read = await stateOf(id);
    expect(read.logs).toMatchObject({ run: 2, runs: 2, archived: true });
    const run1 = (
      await t.gql(
        member,
        `query($id: ID!) { node(id: $id) { ... on Job { logs(run: 1, tail: 10000) { run lines { text } } } } }`,
        { id },
      )
    ).body.data!.node.logs;
    expect(run1.run).toBe(1);
    expect(run1.lines.map((l: { text: string }) => l.text)).toEqual(first);
  });

  it('a reader that lets more than the buffer wait is ended with RATE_LIMITED; a fast one on the same job gets every line', async () => {
    const id = rawId(await submit('chatty', 100_000));
    await until(
      async () => (await stateOf(Buffer.from(`Job:${id}`).toString('base64'))).state === 'RUNNING',
      'running',
    );
    // A pod that writes 1,000 lines in 50 ms.
    const burst: BackendLogs = {
      pods: async () => [{ podSet: 'main', index: 0 }],
      read: async () => [],
      follow: (_run, _pod, _after, sink) => {
        let n = 0;
        const timer = setInterval(() => {
          const lines: BackendLogLine[] = Array.from({ length: 100 }, () => {
            n++;
            return {
              at: Date.now(),
              stream: 'stdout',
              text: `line ${n}`,
              cursor: String(n).padStart(8, '0'),
            };
          });
          sink.lines(lines);
          if (n >= 1000) clearInterval(timer);
        }, 5);
        return () => clearInterval(timer);
      },
      events: async () => [],
    };
    const small = { ...deps(), logs: burst, fanout: new LogFanout(burst), bufferLines: 100, flushMs: 10 };
    const slow = followJobLogs(small, id, {})[Symbol.asyncIterator]();
    const slowEnd = (async () => {
      await new Promise((r) => setTimeout(r, 300)); // reads nothing meanwhile
      for (;;) if ((await slow.next()).done) return 'done';
    })();
    const fast = followJobLogs({ ...small, bufferLines: 10_000 }, id, {});
    const fastLines: string[] = [];
    const fastDone = (async () => {
      for await (const batch of fast) {
        fastLines.push(...batch.lines.map((l) => l.text));
        if (fastLines.length >= 1000) break;
      }
    })();
    await expect(slowEnd).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    await fastDone;
    expect(fastLines).toEqual(Array.from({ length: 1000 }, (_, i) => `line ${i + 1}`));
    await t.gql(member, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, {
      id: Buffer.from(`Job:${id}`).toString('base64'),
    });
  });

  it('500 followers of one job each get all its lines, once, from one backend follow', async () => {
    const id = await submit('popular', 3000);
    await until(async () => (await stateOf(id)).state === 'RUNNING', 'running');
    const streams = Array.from({ length: 500 }, () =>
      collect(followJobLogs(deps(), rawId(id), { tail: 10_000 })),
    );
    const shared = await until(() => {
      const s = fanout!.stats();
      return s.subscribers === 500 && s;
    }, 'all 500 following');
    expect(shared.hubs).toBe(1);
    const all = await Promise.all(streams);
    const texts = all.map((bs) => bs.flatMap((b) => b.lines.map((l) => l.cursor)));
    expect(texts[0]!.length).toBeGreaterThan(100);
    for (const seen of texts) expect(seen).toEqual(texts[0]);
    expect(fanout!.stats()).toEqual({ hubs: 0, subscribers: 0 });
  }, 60_000);

  it('ending the open streams waits for the reads they have under way, so the database can close right after', async () => {
    const id = await submit('at-shutdown', 3000);
    await until(async () => (await stateOf(id)).state === 'RUNNING', 'running');
    // Every read a follower makes is slowed and counted: a stream ended without waiting leaves some in flight.
    let reading = 0;
    const slowOrm = {
      em: {
        fork: (options: object) => {
          const em = t.app.orm.em.fork(options);
          const find = em.findOne.bind(em);
          em.findOne = (async (...args: Parameters<typeof find>) => {
            reading++;
            try {
              await new Promise((r) => setTimeout(r, 30));
              return await find(...args);
            } finally {
              reading--;
            }
          }) as typeof em.findOne;
          return em;
        },
      },
    } as unknown as typeof t.app.orm;
    const open = new Set<() => Promise<void>>();
    const ended: Promise<unknown>[] = [];
    for (let i = 0; i < 20; i++)
      ended.push(
        collect(followJobLogs({ ...deps(), orm: slowOrm, recheckMs: 5, open }, rawId(id), { tail: 0 })),
      );
    await until(() => reading > 0, 'reads under way');
    expect(open.size).toBe(20);
    await Promise.all([...open].map((shutDown) => shutDown()));
    expect(reading).toBe(0);
    expect(open.size).toBe(0);
    // Each stream ended quietly (no error for its reader), and no read starts afterwards.
    await Promise.all(ended);
    await new Promise((r) => setTimeout(r, 50));
    expect(reading).toBe(0);
    await t.gql(member, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, {
      id: Buffer.from(`Job:${id}`).toString('base64'),
    });
  });
});
