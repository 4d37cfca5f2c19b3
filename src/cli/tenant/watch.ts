// fairway watch JOB: the job's state, position, ETA and pending reason live over graphql-ws,
// until it ends (exit 0 SUCCEEDED, 1 FAILED/CANCELLED) or Ctrl-C (130).
//
// On a terminal it re-renders one line in place (`\r` + clear line), refreshed each second so
// the ETA and running time count. Not a progress bar (cli-progress): a bar needs a total, and
// neither the queue position (a preemption or a higher-priority arrival pushes a job back) nor
// the run time (declared, in the backend's clock, which may be scaled) is one it could honestly fill.
import { type Client, createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { COMMON_HELP, need, parse } from './args.js';
import { type CliContext, CliError, EXIT, exitCodeFor } from './context.js';
import { duration, standing } from './format.js';
import { requireToken } from './lookup.js';
import { GetJob, type ResultOf, send, TERMINAL_STATES, text, WatchJob } from './operations.js';

export const WATCH_HELP = `usage: fairway watch JOB [--json]

Follows a job live until it ends: state, queue position, ETA, pending reason, preemptions.
On a terminal, one line updated in place; otherwise (or with --json) one line (JSON object)
per change. Exit status: 0 SUCCEEDED, 1 FAILED or CANCELLED, 130 on Ctrl-C.
  --json             one JSON object per change
${COMMON_HELP}`;

type Update = ResultOf<typeof WatchJob>['jobPosition'];

const SPINNER = '⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏';

/** A graphql-ws error (an Error, a CloseEvent, GraphQL errors) as a CliError with its exit code. */
export function transportError(server: string, error: unknown): CliError {
  if (Array.isArray(error)) {
    const first = error[0] as { message?: string; extensions?: { code?: string } } | undefined;
    const code = first?.extensions?.code;
    return new CliError(
      `${first?.message ?? 'subscription refused'}${code ? ` [${code}]` : ''}`,
      exitCodeFor(code),
    );
  }
  const close = error as { code?: unknown; reason?: unknown };
  if (typeof close.code === 'number') {
    if (close.code === 4401 || close.code === 4403)
      return new CliError(
        `the server refused the connection: ${String(close.reason) || close.code}`,
        EXIT.AUTH,
      );
    return new CliError(
      `lost the connection to ${server} (${close.code}${close.reason ? ` ${String(close.reason)}` : ''})`,
      EXIT.UNREACHABLE,
    );
  }
  const cause =
    (error as { code?: string; message?: string }).code ?? (error as Error).message ?? 'socket error';
  return new CliError(`cannot reach ${server} (${cause})`, EXIT.UNREACHABLE);
}

export function exitCodeForState(state: string): number {
  return state === 'SUCCEEDED' ? EXIT.OK : EXIT.FAILURE;
}

export async function runWatch(argv: string[], ctx: CliContext): Promise<number> {
  const { values, positionals } = parse(argv, {}, 1);
  if (values.help) {
    ctx.out(WATCH_HELP);
    return EXIT.OK;
  }
  const id = need(positionals[0], 'JOB');
  requireToken(ctx);
  // Over HTTP first: NOT_FOUND, a refused token or an unreachable server get their one-line error and exit
  // code.
  const { node } = await send(ctx, GetJob, { id });
  if (node.__typename !== 'Job') throw new CliError(`${id} is not a job`, EXIT.NOT_FOUND);

  const tty = ctx.tty;
  let last: Update | null = null;
  /** The end state was seen (and printed): the stream's completion adds nothing. */
  let settled = false;
  let printed = '';
  let frame = 0;
  const line = (u: Update): string => {
    const running =
      u.state === 'RUNNING' && u.job.startedAt
        ? `  running ${duration(Date.now() - Date.parse(u.job.startedAt))}`
        : '';
    return `${u.job.name}  ${standing({ ...u, preemptionCount: u.job.preemptionCount, lostGpuHours: u.job.lostGpuHours, exitReason: u.job.exitReason })}${running}`;
  };
  const render = (u: Update, final = false): void => {
    if (ctx.json) {
      ctx.out(
        JSON.stringify({
          id: u.job.id,
          name: u.job.name,
          state: u.state,
          position: u.position,
          eta: u.eta,
          pendingReason: u.pendingReason,
          preemptionCount: u.job.preemptionCount,
          exitReason: u.job.exitReason,
          at: new Date().toISOString(),
        }),
      );
    } else if (tty) {
      const mark = final ? (u.state === 'SUCCEEDED' ? '✔' : '✖') : SPINNER[frame++ % SPINNER.length];
      const full = `${mark} ${line(u)}`;
      tty.write(
        `\r\x1b[2K${full.length >= tty.columns ? `${full.slice(0, tty.columns - 2)}…` : full}${final ? '\n' : ''}`,
      );
    } else {
      const text = line(u);
      if (text !== printed) ctx.out(text); // one line per change, never the same one twice
      printed = text;
    }
  };

  const wsUrl = ctx.server.replace(/^http/, 'ws');
  const client: Client = createClient({
    url: wsUrl,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${ctx.token}` },
    lazy: true,
    // A dropped socket is retried; jobPosition sends the current value first, so nothing is missed.
    retryAttempts: 3,
  });
  const ticker = tty ? setInterval(() => last && render(last), 1000) : null;
  try {
    return await new Promise<number>((resolve, reject) => {
      const onAbort = () => {
        if (tty && last) tty.write('\n');
        ctx.err('interrupted');
        resolve(EXIT.INTERRUPTED);
      };
      if (ctx.signal?.aborted) return onAbort();
      ctx.signal?.addEventListener('abort', onAbort, { once: true });
      client.subscribe<ResultOf<typeof WatchJob>>(
        { query: text(WatchJob), variables: { id } },
        {
          next: (message) => {
            if (message.errors?.length) return reject(transportError(ctx.server, message.errors));
            const update = message.data?.jobPosition;
            if (!update) return;
            last = update;
            const ended = TERMINAL_STATES.includes(update.state);
            render(update, ended);
            if (ended) {
              settled = true;
              resolve(exitCodeForState(update.state));
            }
          },
          error: (error) => reject(transportError(ctx.server, error)),
          complete: () => {
            // The server ends the stream after the end state it sent: nothing more to say.
            if (settled) return;
            // The server ended the stream without an end state we saw: ask once more.
            void send(ctx, GetJob, { id }).then(({ node: job }) => {
              if (job.__typename === 'Job' && TERMINAL_STATES.includes(job.state)) {
                ctx.out(`${job.name}  ${standing(job)}`);
                resolve(exitCodeForState(job.state));
              } else
                reject(new CliError('the server ended the subscription before the job ended', EXIT.FAILURE));
            }, reject);
          },
        },
      );
    });
  } finally {
    if (ticker) clearInterval(ticker);
    await client.dispose();
  }
}
