// fairway logs JOB: a run's lines (Job.logs), or with -f the job's output live over graphql-ws
// (jobLogs) until it ends. A follow that is cut off (the server restarted or replaced, a dropped
// socket, RATE_LIMITED for a reader too slow) resumes after the last batch's cursor: no line twice.
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { COMMON_HELP, need, nonNegativeInt, parse, positiveInt } from './args.js';
import { type CliContext, CliError, EXIT } from './context.js';
import { requireToken } from './lookup.js';
import { FollowJobLogs, JobLogs, type LogLine, type ResultOf, send, text } from './operations.js';
import { transportError } from './watch.js';

export const LOGS_HELP = `usage: fairway logs JOB [-f] [--pod N] [--pod-set NAME] [--tail N] [--since D] [--run N] [--timestamps] [--json]

A job's output, oldest line first: the last lines of its latest run (or of --run N), from the
cluster while its pods exist and from the archive after. With -f, then follows it live, run
after run, until the job ends (exit 0); a dropped connection, or a stream the server ended
because the reader was too slow, is resumed where it stopped, no line twice. JOB is the ID
that submit and ls print. Lines are prefixed POD-SET-INDEX when they may come from more than
one pod; stderr lines are red on a terminal (unless NO_COLOR is set).

  -f, --follow       follow the job live until it ends (Ctrl-C: exit 130)
  --pod N            one pod: its index in its pod set, from 0
  --pod-set NAME     one pod set
  --tail N           the last N lines, at most 10000 (default 100; with --since, 10000)
  --since D          only lines written in the last D (30s, 10m, 2h, 1d, 1h30m) or since an
                     ISO time
  --run N            that run (1 = the first start, +1 per readmission; default the latest);
                     not with -f, which follows the current run and the ones after it
  --timestamps       each line prefixed with the time it was written (ISO 8601, UTC)
  --json             one JSON object per line: at, run, podSet, pod, stream, text
${COMMON_HELP}`;

const MAX_TAIL = 10_000;
const DEFAULT_TAIL = 100;
/** Resumes in a row without a batch in between before a follow gives up. */
export const MAX_RESUMES = 5;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since`: a duration back from now (30s, 10m, 2h, 1d, 1h30m) or an ISO time, as an ISO time. */
export function sinceOf(value: string, now = Date.now()): string {
  const parts = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/.test(value)
    ? [...value.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)]
    : null;
  if (parts)
    return new Date(
      now - parts.reduce((sum, [, n, unit]) => sum + Number(n) * UNIT_MS[unit!]!, 0),
    ).toISOString();
  const at = /^\d{4}-\d{2}-\d{2}T/.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(at))
    throw new CliError(
      `--since must be a duration (30s, 10m, 2h, 1d, 1h30m) or an ISO time, got '${value}'`,
      EXIT.USAGE,
    );
  return new Date(at).toISOString();
}

type Job = Extract<ResultOf<typeof JobLogs>['node'], { __typename: 'Job' }>;
type Batch = ResultOf<typeof FollowJobLogs>['jobLogs'];

const COLOURS = [36, 33, 32, 35, 34, 96, 93, 92, 95, 94];

/** Turns lines into what is printed: the pod prefix (when several pods are shown), a time, colours. */
export function lineFormatter(
  job: Pick<Job, 'podSets'>,
  selection: { podSet?: string | undefined; pod?: number | undefined },
  options: { json: boolean; colour: boolean; timestamps: boolean },
): (line: LogLine) => string {
  if (options.json)
    return (l) =>
      JSON.stringify({ at: l.at, run: l.run, podSet: l.podSet, pod: l.pod, stream: l.stream, text: l.text });
  const shown = job.podSets.flatMap((ps) =>
    selection.podSet !== undefined && ps.name !== selection.podSet
      ? []
      : Array.from({ length: ps.count }, (_, i) => `${ps.name}-${i}`).filter(
          (_, i) => selection.pod === undefined || i === selection.pod,
        ),
  );
  const prefixed = shown.length > 1;
  const width = Math.max(0, ...shown.map((s) => s.length));
  const paint = (code: number, s: string) => (options.colour ? `\x1b[${code}m${s}\x1b[0m` : s);
  return (l) => {
    const name = `${l.podSet}-${l.pod}`;
    const index = shown.indexOf(name);
    const prefix = prefixed
      ? `${paint(COLOURS[Math.max(index, 0) % COLOURS.length]!, name.padEnd(width))} | `
      : '';
    const at = options.timestamps ? `${l.at} ` : '';
    return `${prefix}${at}${l.stream === 'STDERR' ? paint(31, l.text) : l.text}`;
  };
}

export async function runLogs(argv: string[], ctx: CliContext): Promise<number> {
  const { values, positionals } = parse(
    argv,
    {
      follow: { type: 'boolean', short: 'f' },
      pod: { type: 'string' },
      'pod-set': { type: 'string' },
      tail: { type: 'string' },
      since: { type: 'string' },
      run: { type: 'string' },
      timestamps: { type: 'boolean' },
    },
    1,
  );
  if (values.help) {
    ctx.out(LOGS_HELP);
    return EXIT.OK;
  }
  const id = need(positionals[0], 'JOB');
  // --since alone means every line since then (as kubectl): as many as one read gives.
  const tail = positiveInt(values.tail, '--tail', values.since === undefined ? DEFAULT_TAIL : MAX_TAIL);
  if (tail > MAX_TAIL)
    throw new CliError(`--tail must be at most ${MAX_TAIL}, got '${values.tail}'`, EXIT.USAGE);
  const pod = nonNegativeInt(values.pod, '--pod');
  const podSet = values['pod-set'];
  if (podSet === '') throw new CliError('--pod-set must name a pod set', EXIT.USAGE);
  const run = values.run === undefined ? undefined : positiveInt(values.run, '--run', 1);
  const follow = values.follow === true;
  if (follow && run !== undefined)
    throw new CliError(
      '--run reads one run: not with -f (which follows the current run and the next)',
      EXIT.USAGE,
    );
  const since = values.since === undefined ? undefined : sinceOf(values.since);
  requireToken(ctx);

  // Over HTTP first (with -f too): NOT_FOUND, FORBIDDEN, an unknown pod set or pod, an unreachable
  // server get their one-line error and exit code before anything is followed.
  const selection = { ...(podSet !== undefined ? { podSet } : {}), ...(pod !== undefined ? { pod } : {}) };
  const { node } = await send(ctx, JobLogs, {
    id,
    ...selection,
    ...(run !== undefined ? { run } : {}),
    tail: follow ? 1 : tail,
    ...(since !== undefined && !follow ? { since } : {}),
  });
  if (node.__typename !== 'Job') throw new CliError(`${id} is not a job`, EXIT.NOT_FOUND);
  const format = lineFormatter(node, selection, {
    json: ctx.json,
    colour: ctx.tty !== undefined && !ctx.env.NO_COLOR,
    timestamps: values.timestamps === true,
  });
  if (!follow) {
    if (node.logs.run === null) ctx.err(`${node.name} has not started yet: no logs (-f waits for them)`);
    for (const line of node.logs.lines) ctx.out(format(line));
    return EXIT.OK;
  }
  const from = since === undefined ? null : Date.parse(since);
  return followLogs(ctx, { id, ...selection, tail }, (batch) => {
    for (const line of batch.lines) if (from === null || Date.parse(line.at) >= from) ctx.out(format(line));
  });
}

type Outcome = { ended: true } | { ended: false; error: unknown; rateLimited?: boolean };

const codeOf = (errors: readonly unknown[]): string | undefined =>
  (errors[0] as { extensions?: { code?: string } } | undefined)?.extensions?.code;

/** Whether a follow cut off by this may go on after its last cursor (else it is the command's error). */
function resumable(error: unknown): boolean {
  if (Array.isArray(error)) return ['RATE_LIMITED', 'SERVICE_UNAVAILABLE'].includes(codeOf(error) ?? '');
  const close = (error as { code?: unknown }).code;
  // 4400 a bad request, 4401/4403 the token refused: trying again changes nothing.
  return typeof close !== 'number' || ![4400, 4401, 4403].includes(close);
}

/** Why a follow stopped, in a few words, for the resume notice. */
function why(error: unknown): string {
  if (Array.isArray(error))
    return codeOf(error) === 'RATE_LIMITED'
      ? 'the server ended the stream (RATE_LIMITED)'
      : String(codeOf(error));
  if (error === 'complete') return 'the server ended the stream early';
  const close = error as { code?: unknown; reason?: unknown; message?: string };
  if (typeof close.code === 'number')
    return `connection closed (${close.code}${close.reason ? ` ${String(close.reason)}` : ''})`;
  return `connection lost (${close.code ?? close.message ?? 'socket error'})`;
}

/**
 * Follows jobLogs until a batch says `ended` (EXIT.OK) or Ctrl-C (EXIT.INTERRUPTED). Cut off, it
 * subscribes again with the last batch's cursor as `after`: at once after RATE_LIMITED, after a
 * growing pause (0.5 s, 1 s, 2 s…) after a dropped connection, at most MAX_RESUMES times in a row
 * without a batch in between. graphql-ws's own retry is off: it would subscribe again with the first
 * variables and send the tail twice.
 */
export async function followLogs(
  ctx: CliContext,
  variables: { id: string; podSet?: string; pod?: number; tail: number },
  print: (batch: Batch) => void,
  options: { pauseMs?: number } = {},
): Promise<number> {
  let after: string | null = null;
  let lastRun: number | null = null;
  let failures = 0;
  for (;;) {
    if (ctx.signal?.aborted) return interrupted(ctx);
    const outcome = await followOnce(ctx, { ...variables, ...(after ? { after } : {}) }, (batch) => {
      failures = 0;
      after = batch.cursor;
      if (batch.run !== null && lastRun !== null && batch.run !== lastRun && !ctx.json)
        ctx.err(`fairway logs: run ${batch.run} started`);
      if (batch.run !== null) lastRun = batch.run;
      print(batch);
    });
    if (outcome === 'interrupted') return interrupted(ctx);
    if (outcome.ended) return EXIT.OK;
    if (!resumable(outcome.error) || ++failures > MAX_RESUMES) {
      if (outcome.error === 'complete')
        throw new CliError('the server ended the log stream before the job ended', EXIT.FAILURE);
      throw transportError(ctx.server, outcome.error);
    }
    ctx.err(
      `fairway logs: ${why(outcome.error)}; resuming${after ? ' after the last line' : ''} (${failures}/${MAX_RESUMES})`,
    );
    const pause = outcome.rateLimited ? 0 : (options.pauseMs ?? 500) * 2 ** (failures - 1);
    if (pause > 0 && !(await sleep(pause, ctx.signal))) return interrupted(ctx);
  }
}

function interrupted(ctx: CliContext): number {
  ctx.err('interrupted');
  return EXIT.INTERRUPTED;
}

/** false when interrupted first. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (value: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(value);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** One subscription on a fresh socket, until it ends, fails or Ctrl-C. */
async function followOnce(
  ctx: CliContext,
  variables: Record<string, unknown>,
  onBatch: (batch: Batch) => void,
): Promise<Outcome | 'interrupted'> {
  const client = createClient({
    url: ctx.server.replace(/^http/, 'ws'),
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${ctx.token}` },
    lazy: true,
    retryAttempts: 0,
  });
  let onAbort = () => {};
  try {
    return await new Promise<Outcome | 'interrupted'>((resolve) => {
      onAbort = () => resolve('interrupted');
      ctx.signal?.addEventListener('abort', onAbort, { once: true });
      client.subscribe<ResultOf<typeof FollowJobLogs>>(
        { query: text(FollowJobLogs), variables },
        {
          next: (message) => {
            if (message.errors?.length)
              return resolve({
                ended: false,
                error: message.errors,
                rateLimited: codeOf(message.errors) === 'RATE_LIMITED',
              });
            const batch = message.data?.jobLogs;
            if (!batch) return;
            onBatch(batch);
            if (batch.ended) resolve({ ended: true });
          },
          error: (error) =>
            resolve({
              ended: false,
              error,
              rateLimited: Array.isArray(error) && codeOf(error) === 'RATE_LIMITED',
            }),
          // After `ended` this changes nothing (the promise is settled); before, the stream was cut short.
          complete: () => resolve({ ended: false, error: 'complete' }),
        },
      );
    });
  } finally {
    ctx.signal?.removeEventListener('abort', onAbort);
    await client.dispose();
  }
}
