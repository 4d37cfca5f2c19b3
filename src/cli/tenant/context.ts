// Contract (lead) shared by the tenant CLI's commands; the CLI helper owns and may extend it
// (not break it): apply.ts is written against it in parallel.

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
  /** The server could not be reached. */
  UNREACHABLE: 7,
  /** `apply --check` found differences (nothing applied). */
  DIFF: 8,
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
  /** Bearer token (FAIRWAY_TOKEN, or the login file); undefined: not logged in. */
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
}
