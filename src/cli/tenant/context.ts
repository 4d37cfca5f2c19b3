// Contract shared by the tenant CLI's commands (apply.ts is written against it in parallel):
// EXIT, CliError and CliContext keep their meaning; createCliContext builds the real one.
import { type Credentials, readCredentials } from './credentials.js';

/** Exit codes for scripts (documented in `fairway help`). */
export const EXIT = {
  OK: 0,
  /** The server refused or failed (an error not below), or a watched job FAILED/was CANCELLED. */
  FAILURE: 1,
  /** Bad flags or a bad input file: nothing was sent. */
  USAGE: 2,
  /** No token, or the server said UNAUTHENTICATED/FORBIDDEN. */
  AUTH: 3,
  /** NOT_FOUND. */
  NOT_FOUND: 4,
  /** CONFLICT (e.g. an idempotency key reused with other input). */
  CONFLICT: 5,
  /** RATE_LIMITED. */
  RATE_LIMITED: 6,
  /** The server could not be reached (or answered SERVICE_UNAVAILABLE / not GraphQL). */
  UNREACHABLE: 7,
  /** `apply --check` found differences (nothing applied). */
  DIFF: 8,
  /** Interrupted (Ctrl-C), as shells report SIGINT. */
  INTERRUPTED: 130,
} as const;

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export interface CliContext {
  /** GraphQL HTTP endpoint, e.g. http://localhost:4000/graphql (flag --server, FAIRWAY_SERVER, or the login file). */
  server: string;
  /** Bearer token (--token, FAIRWAY_TOKEN, or the login file); undefined: not logged in. */
  token?: string;
  /** --json: machine-readable output on stdout, nothing else there. */
  json: boolean;
  env: NodeJS.ProcessEnv;
  out(s: string): void;
  err(s: string): void;
  /**
   * One GraphQL request over HTTP with the token. Resolves with `data`; throws CliError with the
   * exit code for the first error's extensions.code (see EXIT), or UNREACHABLE.
   */
  request<T = Record<string, unknown>>(query: string, variables?: Record<string, unknown>): Promise<T>;
  /**
   * A terminal to re-render one line in place (`\r`), when stdout is a TTY and the output is
   * not --json; undefined otherwise (tests, pipes): commands then print one line per change.
   */
  tty?: { write(s: string): void; columns: number };
  /** Aborted on Ctrl-C (SIGINT) while a command runs; long-running commands stop and return
   * EXIT.INTERRUPTED.
   */
  signal?: AbortSignal;
  /** Where --token-stdin and `-f -` read from (default process.stdin). */
  stdin?: NodeJS.ReadableStream;
  /** Where the login file lives (credentials.json in it); default configDirOf(env). */
  configDir?: string;
}

/** Exit code for a GraphQL error code (extensions.code). */
export function exitCodeFor(code: string | undefined): number {
  switch (code) {
    case 'UNAUTHENTICATED':
    case 'FORBIDDEN':
      return EXIT.AUTH;
    case 'NOT_FOUND':
      return EXIT.NOT_FOUND;
    case 'CONFLICT':
      return EXIT.CONFLICT;
    case 'RATE_LIMITED':
      return EXIT.RATE_LIMITED;
    case 'SERVICE_UNAVAILABLE':
      return EXIT.UNREACHABLE;
    default:
      return EXIT.FAILURE;
  }
}

/** `http://host:4000` and `http://host:4000/` mean the gateway's /graphql endpoint. */
export function normalizeServer(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CliError(`server '${raw}' is not a URL (e.g. http://localhost:4000/graphql)`, EXIT.USAGE);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new CliError(`server '${raw}' must be http:// or https://`, EXIT.USAGE);
  if (url.pathname === '/' || url.pathname === '') url.pathname = '/graphql';
  return url.toString();
}

export const DEFAULT_SERVER = 'http://localhost:4000/graphql';
const REQUEST_TIMEOUT_MS = 30_000;

/** Why fetch failed, in one line (ECONNREFUSED, ENOTFOUND, a timeout…), never a stack. */
function unreachable(server: string, error: unknown): CliError {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const why =
    (error as Error).name === 'TimeoutError'
      ? `no answer in ${REQUEST_TIMEOUT_MS / 1000} s`
      : (cause?.code ?? cause?.message ?? (error as Error).message);
  return new CliError(`cannot reach ${server} (${why})`, EXIT.UNREACHABLE);
}

type GqlErrors = { message: string; extensions?: { code?: string; retryAfterSeconds?: number } }[];

/** Sends one operation; shared by the context and by `login` (which checks a token before storing it). */
export async function postGraphQL<T>(
  server: string,
  token: string | undefined,
  query: string,
  variables: Record<string, unknown> | undefined,
  signal?: AbortSignal,
): Promise<T> {
  let response: Response;
  const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
  try {
    response = await fetch(server, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/graphql-response+json, application/json',
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: JSON.stringify({ query, variables: variables ?? {} }),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
  } catch (error) {
    if (signal?.aborted) throw new CliError('interrupted', EXIT.INTERRUPTED);
    throw unreachable(server, error);
  }
  let body: { data?: T | null; errors?: GqlErrors };
  try {
    body = (await response.json()) as typeof body;
  } catch {
    throw new CliError(
      `${server} answered HTTP ${response.status}, not GraphQL (is it a Fairway gateway?)`,
      EXIT.UNREACHABLE,
    );
  }
  const first = body.errors?.[0];
  if (first) {
    const code = first.extensions?.code;
    const retry =
      code === 'RATE_LIMITED' && first.extensions?.retryAfterSeconds
        ? ` (retry after ${first.extensions.retryAfterSeconds} s)`
        : '';
    throw new CliError(`${first.message}${code ? ` [${code}]` : ''}${retry}`, exitCodeFor(code));
  }
  if (body.data == null)
    throw new CliError(`${server} answered HTTP ${response.status} with no data`, EXIT.FAILURE);
  return body.data;
}

export interface CreateCliContextOptions {
  io: { out(s: string): void; err(s: string): void };
  env: NodeJS.ProcessEnv;
  /** Flags given on the command line (they win over the environment and the login file). */
  flags?: { server?: string; token?: string; json?: boolean };
  /** The real stdout when it may be used for in-place rendering (a TTY), else null. */
  stdout?: { write(s: string): unknown; isTTY?: boolean; columns?: number } | null;
  stdin?: NodeJS.ReadableStream;
  signal?: AbortSignal;
}

/** Where the login file lives: $FAIRWAY_CONFIG_DIR, $XDG_CONFIG_HOME/fairway, or ~/.config/fairway. */
export function configDirOf(env: NodeJS.ProcessEnv, home: string): string {
  // An empty variable counts as unset, as shells and CI systems often leave them.
  if (env.FAIRWAY_CONFIG_DIR) return env.FAIRWAY_CONFIG_DIR;
  if (env.XDG_CONFIG_HOME) return `${env.XDG_CONFIG_HOME}/fairway`;
  return `${env.HOME || home}/.config/fairway`;
}

/** Flags, then FAIRWAY_SERVER/FAIRWAY_TOKEN, then the login file, then the local demo server. */
export async function createCliContext(options: CreateCliContextOptions): Promise<CliContext> {
  const { env, io, flags = {} } = options;
  const { homedir } = await import('node:os');
  const configDir = configDirOf(env, homedir());
  const stored: Credentials | null = flags.server && flags.token ? null : await readCredentials(configDir);
  const server = normalizeServer(flags.server || env.FAIRWAY_SERVER || stored?.server || DEFAULT_SERVER);
  // A stored token belongs to the stored server: never send it to another one.
  const storedToken = stored && normalizeServer(stored.server) === server ? stored.token : undefined;
  const token = flags.token || env.FAIRWAY_TOKEN || storedToken;
  const json = flags.json ?? false;
  const stdout = options.stdout;
  const signal = options.signal ?? new AbortController().signal;
  const ctx: CliContext = {
    server,
    json,
    env,
    out: io.out,
    err: io.err,
    signal,
    stdin: options.stdin ?? process.stdin,
    configDir,
    request: (query, variables) => postGraphQL(server, token, query, variables, signal),
  };
  if (token) ctx.token = token;
  if (stdout?.isTTY && !json)
    ctx.tty = { write: (s) => void stdout.write(s), columns: stdout.columns ?? 100 };
  return ctx;
}
