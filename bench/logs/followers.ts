// The followers: one graphql-ws client (its own socket and connection_init) per follower, as many
// `fairway logs -f` would be, each with one subscription: `jobLogs(id, tail)` or the baseline
// `jobUpdated(id)`. What each receives is kept with the time it arrived (ms epoch, sub-ms).
import { performance } from 'node:perf_hooks';
import { type Client, createClient } from 'graphql-ws';
import WebSocket from 'ws';

export const now = () => performance.timeOrigin + performance.now();

export interface ReceivedLine {
  /** The simulated pod's own cursor (`<step, 12 digits>:<sub>`), from the line's cursor. */
  key: string;
  step: number;
  at: number;
  recv: number;
  /** Came in the first batch (the `tail` written before the stream opened). */
  backlog: boolean;
  /** A training step's line (`[main-0] step k loss=…`); else the prologue or the last line (SIGTERM…). */
  isStep: boolean;
}

export interface Follower {
  jobId: string;
  client: Client;
  /** When its first message (jobLogs: the backlog batch) came, or its subscription failed. */
  ready: Promise<void>;
  messages: { recv: number; lines: number; ended: boolean; state?: string }[];
  lines: ReceivedLine[];
  errors: string[];
  completed: boolean;
  dispose(): void;
}

const errorText = (e: unknown): string =>
  Array.isArray(e)
    ? JSON.stringify(
        e.map((x: { message?: string; extensions?: { code?: string } }) => x.extensions?.code ?? x.message),
      )
    : e instanceof Error
      ? e.message
      : `close ${(e as { code?: number }).code ?? '?'} ${(e as { reason?: string }).reason ?? String(e)}`;

/** The simulated pod's cursor inside a LogLine cursor (base64url JSON, `c`). */
function podCursor(cursor: string): string {
  return (JSON.parse(Buffer.from(cursor, 'base64url').toString()) as { c: string }).c;
}

interface LogBatchData {
  jobLogs: {
    run: number | null;
    cursor: string;
    ended: boolean;
    lines: { at: string; cursor: string; text: string }[];
  };
}
interface JobUpdatedData {
  jobUpdated: { id: string; state: string };
}

export type FollowerKind = 'jobLogs' | 'jobUpdated';

export function openFollower(
  url: string,
  token: string,
  kind: FollowerKind,
  jobId: string,
  tail: number,
): Follower {
  const client = createClient({
    url: url.replace(/^http/, 'ws'),
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${token}` },
    lazy: true,
    retryAttempts: 0,
    keepAlive: 0,
  });
  let markReady: () => void = () => undefined;
  const follower: Follower = {
    jobId,
    client,
    ready: new Promise<void>((r) => {
      markReady = r;
    }),
    messages: [],
    lines: [],
    errors: [],
    completed: false,
    dispose: () => undefined,
  };
  const sink = {
    next: (m: { data?: unknown; errors?: unknown }) => {
      const recv = now();
      if (m.errors) follower.errors.push(errorText(m.errors));
      if (kind === 'jobLogs' && m.data) {
        const b = (m.data as LogBatchData).jobLogs;
        const backlog = follower.messages.length === 0;
        follower.messages.push({ recv, lines: b.lines.length, ended: b.ended });
        for (const l of b.lines) {
          const key = podCursor(l.cursor);
          follower.lines.push({
            key,
            step: Number(key.slice(0, 12)),
            at: Date.parse(l.at),
            recv,
            backlog,
            isStep: /\] step \d/.test(l.text),
          });
        }
      } else if (m.data) {
        follower.messages.push({
          recv,
          lines: 0,
          ended: false,
          state: (m.data as JobUpdatedData).jobUpdated.state,
        });
      }
      markReady();
    },
    error: (e: unknown) => {
      follower.errors.push(errorText(e));
      markReady();
    },
    complete: () => {
      follower.completed = true;
      markReady();
    },
  };
  follower.dispose =
    kind === 'jobLogs'
      ? client.subscribe(
          {
            query: `subscription($id: ID!, $tail: Int) { jobLogs(id: $id, tail: $tail) { run cursor ended lines { at run podSet pod stream text cursor } } }`,
            variables: { id: jobId, tail },
          },
          sink,
        )
      : client.subscribe(
          { query: `subscription($id: ID!) { jobUpdated(id: $id) { id state } }`, variables: { id: jobId } },
          sink,
        );
  return follower;
}

/** `perJob` followers of each job, opened `batch` at a time; jobUpdated sends nothing at once, so its
 * followers are counted as open once their socket is connected (acknowledged) and the subscribe sent. */
export async function openFollowers(
  url: string,
  token: string,
  kind: FollowerKind,
  jobIds: readonly string[],
  perJob: number,
  tail: number,
  batch: number,
): Promise<Follower[]> {
  const all: Follower[] = [];
  const order = Array.from({ length: perJob }, () => jobIds).flat();
  for (let b = 0; b < order.length; b += batch) {
    const opened = order.slice(b, b + batch).map((id) => {
      const f = openFollower(url, token, kind, id, tail);
      if (kind === 'jobUpdated') {
        const connected = new Promise<void>((r) => f.client.on('connected', () => r()));
        f.ready = Promise.race([connected.then(() => new Promise<void>((r) => setTimeout(r, 50))), f.ready]);
      }
      return f;
    });
    all.push(...opened);
    await Promise.all(opened.map((f) => Promise.race([f.ready, new Promise((r) => setTimeout(r, 30_000))])));
  }
  return all;
}

export async function closeFollowers(followers: readonly Follower[]): Promise<void> {
  for (const f of followers) f.dispose();
  await Promise.all(followers.map((f) => f.client.dispose()));
}
