// fairway logs against a real gateway on a real port (HTTP and graphql-ws), the simulated cluster
// at 600×: a job followed with -f to its end, every line once; the same lines read back from the
// archive (--tail, --pod, --since, --json); a follow cut off by a dropped connection and by
// RATE_LIMITED resumed after its last cursor, no line twice; another tenant's job NOT_FOUND;
// bad flags exit 2 with nothing sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BackendLogLine, BackendLogs } from '../../src/backends/port.js';
import { SimulatedBackend } from '../../src/backends/simulated/simulated.js';
import { EXIT } from '../../src/cli/tenant/context.js';
import { runTenantCommand } from '../../src/cli/tenant/index.js';
import { lineFormatter, sinceOf } from '../../src/cli/tenant/logs.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const READ = `query($id: ID!) { node(id: $id) { ... on Job { state logs(tail: 10000) { lines { pod text } } } } }`;
/** Jobs named so write this many lines at once, past the follower's buffer (FAIRWAY_LOG_FOLLOW_BUFFER_LINES). */
const BURST = 10_001;

let t: TestApp;
let member: string;

interface Run {
  code: number;
  out: string[];
  err: string;
}

async function cli(
  args: string[],
  options: { token?: string; server?: string; signal?: AbortSignal; onOut?: (line: string) => void } = {},
): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runTenantCommand(
    'logs',
    args,
    { out: (s) => (out.push(s), options.onOut?.(s)), err: (s) => err.push(s) },
    {
      env: {
        FAIRWAY_CONFIG_DIR: '/nonexistent',
        FAIRWAY_SERVER: options.server ?? t.url,
        FAIRWAY_TOKEN: options.token ?? member,
      },
      stdout: null,
      ...(options.signal ? { signal: options.signal } : {}),
    },
  );
  return { code, out, err: err.join('\n') };
}

async function submit(name: string, seconds: number, pods = 2): Promise<string> {
  const res = await t.gql(member, SUBMIT, {
    in: {
      name,
      podSets: [{ name: 'workers', count: pods, gpusPerPod: 1 }],
      expectedDurationSeconds: seconds,
      container: { image: 'nvcr.io/nvidia/pytorch:24.05-py3', command: ['torchrun', 'train.py'] },
    },
  });
  expect(res.body.errors, JSON.stringify(res.body)).toBeUndefined();
  return res.body.data!.submitJob.id;
}

async function archived(id: string): Promise<{ pod: number; text: string }[]> {
  const res = await t.gql(member, READ, { id });
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return res.body.data!.node.logs.lines;
}

/** `workers-N | text` lines (the prefix of a job with two pods) as `{pod, text}`. */
function parsed(out: string[]): { pod: number; text: string }[] {
  return out.map((line) => {
    const m = /^workers-(\d) \| (.*)$/.exec(line);
    expect(m, line).not.toBeNull();
    return { pod: Number(m![1]), text: m![2]! };
  });
}

const sorted = (lines: { pod: number; text: string }[]) => lines.map((l) => `${l.pod} ${l.text}`).sort();

/**
 * A pod of a job named chatty-*: 50 lines, then BURST lines at once (the follower ends the stream:
 * RATE_LIMITED), and followed again from a cursor, the rest in small batches. Every other job: the
 * simulated cluster's own logs.
 */
function burstingLogs(real: BackendLogs): BackendLogs {
  const line = (n: number): BackendLogLine => ({
    at: Date.now(),
    stream: 'stdout',
    text: `line ${n}`,
    cursor: String(n).padStart(8, '0'),
  });
  const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => line(from + i));
  return {
    pods: (run) => real.pods(run),
    read: async (run, pod, options) => (run.name.startsWith('chatty') ? [] : real.read(run, pod, options)),
    events: (run) => real.events(run),
    follow: (run, pod, after, sink) => {
      if (!run.name.startsWith('chatty')) return real.follow(run, pod, after, sink);
      const timers: NodeJS.Timeout[] = [];
      if (after === null) {
        sink.lines(range(1, 50));
        timers.push(setTimeout(() => sink.lines(range(51, 50 + BURST)), 1000));
      } else {
        let n = Number(after);
        const every = setInterval(() => {
          if (n >= 50 + BURST) return clearInterval(every);
          sink.lines(range(n + 1, Math.min(n + 500, 50 + BURST)));
          n += 500;
        }, 20);
        timers.push(every);
      }
      return () => timers.forEach(clearTimeout);
    },
  };
}

beforeAll(async () => {
  t = await startTestApp({
    backend: () => {
      const backend = new SimulatedBackend({ timeScale: 600, now: Date.now });
      (backend as { logs: BackendLogs }).logs = burstingLogs(backend.logs);
      return backend;
    },
  });
  member = t.token('aurora-research', 'MEMBER');
});
afterAll(() => t?.close());

describe('fairway logs', () => {
  let jobId: string;
  let followed: { pod: number; text: string }[];

  it('-f follows a running job to its end: every line once, each pod prefixed, exit 0', async () => {
    jobId = await submit('logs-follow', 1800); // 3 s at 600×
    const run = await cli([jobId, '-f', '--tail', '10000']);
    expect(run.code, run.err).toBe(EXIT.OK);
    followed = parsed(run.out);
    for (const pod of [0, 1]) {
      const own = followed.filter((l) => l.pod === pod).map((l) => l.text);
      expect(own[0]).toBe(`[workers-${pod}] starting logs-follow (1 GPU)`);
      expect(own.at(-1)).toMatch(/finished: 100 steps, exit code 0/);
    }
    expect(new Set(followed.map((l) => `${l.pod} ${l.text}`)).size).toBe(followed.length);
    expect(sorted(followed)).toEqual(sorted(await archived(jobId)));
  });

  it('reads a finished job from the archive: the last 100 by default, --tail N, oldest first', async () => {
    const all = await archived(jobId);
    expect(all.length).toBeGreaterThan(100);
    const byDefault = await cli([jobId]);
    expect(byDefault.code, byDefault.err).toBe(EXIT.OK);
    expect(parsed(byDefault.out)).toEqual(all.slice(-100));
    const five = await cli([jobId, '--tail', '5', '--json']);
    const lines = five.out.map((l) => JSON.parse(l));
    expect(lines.map(({ pod, text }) => ({ pod, text }))).toEqual(all.slice(-5));
    expect(lines[0]).toMatchObject({ run: 1, podSet: 'workers', stream: 'STDOUT' });
    expect(lines.map((l) => l.at)).toEqual(lines.map((l) => l.at).sort());
    const run1 = await cli([jobId, '--run', '1', '--tail', '3', '--timestamps']);
    expect(run1.out).toHaveLength(3);
    expect(run1.out[0]).toMatch(/^workers-\d \| \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[workers-\d\] /);
  });

  it('--pod N: that pod only, without a prefix; an unknown pod is refused by the server', async () => {
    const pod1 = await cli([jobId, '--pod', '1', '--pod-set', 'workers', '--tail', '10000']);
    expect(pod1.code, pod1.err).toBe(EXIT.OK);
    expect(pod1.out).toEqual(followed.filter((l) => l.pod === 1).map((l) => l.text));
    const missing = await cli([jobId, '--pod', '7']);
    expect(missing.code).toBe(EXIT.FAILURE);
    expect(missing.err).toMatch(/^fairway logs: The job has no pod 7\. \[BAD_USER_INPUT\]$/);
  });

  it('--since: the lines written since then (every one, not only the last 100)', async () => {
    expect(parsed((await cli([jobId, '--since', '1h'])).out)).toEqual(await archived(jobId));
    await new Promise((r) => setTimeout(r, 1500)); // the job ended before this: nothing in the last second
    expect(await cli([jobId, '--since', '1s'])).toMatchObject({ code: 0, out: [] });
    expect(Date.parse(sinceOf('1h30m', 10_000_000))).toBe(10_000_000 - 5_400_000);
    expect(sinceOf('2026-05-01T10:00:00Z')).toBe('2026-05-01T10:00:00.000Z');
  });

  it("another tenant's job is NOT_FOUND (4), with and without -f; a platform admin FORBIDDEN (3)", async () => {
    const other = t.token('borealis-inference', 'TENANT_ADMIN');
    for (const args of [[jobId], [jobId, '-f']]) {
      const res = await cli(args, { token: other });
      expect(res.code, res.err).toBe(EXIT.NOT_FOUND);
      expect(res.err).toMatch(/^fairway logs: .*\[NOT_FOUND\]$/);
      expect(res.out).toEqual([]);
    }
    const admin = await cli([jobId, '-f'], { token: t.token(null, 'PLATFORM_ADMIN') });
    expect(admin.code).toBe(EXIT.AUTH);
    expect(admin.err).toMatch(/\[FORBIDDEN\]$/);
  });

  it.each([
    [['--tail', '0'], /--tail must be a positive integer, got '0'/],
    [['--tail', '10001'], /--tail must be at most 10000/],
    [['--tail', 'all'], /--tail must be a positive integer/],
    [['--pod', 'one'], /--pod must be an integer, 0 or more/],
    [['--since', 'yesterday'], /--since must be a duration/],
    [['--run', '1', '-f'], /--run reads one run: not with -f/],
    [['--colour'], /Unknown option '--colour'/],
  ])('%j exits 2 with the reason, nothing sent', async (args, message) => {
    const before = await t.rowCounts();
    const res = await cli([jobId, ...args]);
    expect(res.code).toBe(EXIT.USAGE);
    expect(res.err).toMatch(message);
    expect(await t.rowCounts()).toEqual(before);
  });
});

describe('fairway logs -f resumes after its last cursor', () => {
  it('through a dropped connection (the server unreachable for a while): no line lost or twice', async () => {
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(t.url).port) });
    try {
      const id = await submit('logs-dropped', 3000); // 5 s at 600×
      let cut: Promise<void> | null = null;
      const run = await cli([id, '-f', '--tail', '10000'], {
        server: `http://127.0.0.1:${proxy.port}/graphql`,
        onOut: () => {
          cut ??= (async () => {
            await proxy.setMode('cut');
            await new Promise((r) => setTimeout(r, 800));
            await proxy.setMode('pass');
          })();
        },
      });
      await cut;
      expect(run.code, run.err).toBe(EXIT.OK);
      expect(run.err).toMatch(/connection (closed|lost) .*; resuming after the last line \(1\/5\)/);
      const lines = parsed(run.out);
      expect(new Set(lines.map((l) => `${l.pod} ${l.text}`)).size).toBe(lines.length);
      expect(sorted(lines)).toEqual(sorted(await archived(id)));
    } finally {
      await proxy.close();
    }
  });

  it('after RATE_LIMITED (a burst past the buffer): every line once, in order', async () => {
    const id = await submit('chatty-logs', 36_000, 1); // 60 s: cancelled below
    const abort = new AbortController();
    const total = 50 + BURST;
    let seen = 0;
    const run = await cli([id, '-f'], {
      signal: abort.signal,
      onOut: () => ++seen === total && abort.abort(),
    });
    expect(run.err).toMatch(/RATE_LIMITED\); resuming after the last line \(1\/5\)/);
    expect(run.code).toBe(EXIT.INTERRUPTED);
    expect(run.out).toEqual(Array.from({ length: total }, (_, i) => `line ${i + 1}`));
    await t.gql(member, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, { id });
  });
});

describe('the line format', () => {
  const line = (podSet: string, pod: number, stream: 'STDOUT' | 'STDERR' | null, text: string) => ({
    at: '2026-05-01T10:00:00.000Z',
    run: 1,
    podSet,
    pod,
    stream,
    text,
    cursor: 'c',
  });
  const job = {
    podSets: [
      { name: 'launcher', count: 1 },
      { name: 'worker', count: 12 },
    ],
  };
  const plain = { json: false, colour: false, timestamps: false };

  it('a prefix aligned over the pods shown, none when one pod is; stderr unmarked off a terminal', () => {
    const all = lineFormatter(job, {}, plain);
    expect(all(line('launcher', 0, 'STDOUT', 'up'))).toBe('launcher-0 | up');
    expect(all(line('worker', 3, 'STDERR', 'oops'))).toBe('worker-3   | oops');
    expect(lineFormatter(job, { podSet: 'worker', pod: 3 }, plain)(line('worker', 3, null, 'x'))).toBe('x');
    expect(lineFormatter(job, { podSet: 'launcher' }, plain)(line('launcher', 0, null, 'x'))).toBe('x');
    expect(lineFormatter(job, { pod: 0 }, plain)(line('worker', 0, null, 'x'))).toBe('worker-0   | x');
    expect(
      lineFormatter({ podSets: [{ name: 'main', count: 1 }] }, {}, plain)(line('main', 0, null, 'x')),
    ).toBe('x');
  });

  it('on a terminal: the prefix coloured per pod, stderr red; --timestamps; --json', () => {
    const tty = lineFormatter(job, {}, { ...plain, colour: true, timestamps: true });
    expect(tty(line('worker', 0, 'STDERR', 'oops'))).toBe(
      '\x1b[33mworker-0  \x1b[0m | 2026-05-01T10:00:00.000Z \x1b[31moops\x1b[0m',
    );
    expect(
      JSON.parse(lineFormatter(job, {}, { ...plain, json: true })(line('worker', 0, 'STDOUT', 'up'))),
    ).toEqual({
      at: '2026-05-01T10:00:00.000Z',
      run: 1,
      podSet: 'worker',
      pod: 0,
      stream: 'STDOUT',
      text: 'up',
    });
  });
});
