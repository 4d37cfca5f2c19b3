import type { Route } from '../../../plugins/useRoutes.js';

export interface ReadinessRouteOptions {
  /** Default '/ready'. */
  path?: string;
  /** Resolves when the database answers; rejects when it does not. */
  check: () => Promise<void>;
  /**
   * How long a probe waits for `check` before answering 503 (default 500 ms): a database
   * that drops packets never answers, and a readiness probe must not hang with it.
   */
  timeoutMs?: number;
  /** Told why a check failed (server logs only; never sent to the caller). */
  onFailure?: (error: unknown) => void;
}

/** The only reason a caller ever sees: no address, port or driver text of the database. */
export const NOT_READY_REASON = 'database unavailable';

/**
 * `/ready` (any method): 200 when the database answers within the timeout, 503 with a fixed
 * reason otherwise. (`/health` is yoga's liveness check and never touches the database.)
 *
 * Probes share one check in flight: when the database does not answer, a burst of probes
 * must not take every pooled connection, each waiting for its own statement timeout; and a
 * probe that arrives when the shared check is already past the timeout answers 503 at once.
 */
export function readinessRoute(options: ReadinessRouteOptions): Route {
  const timeoutMs = options.timeoutMs ?? 500;
  let inFlight: { answer: Promise<boolean>; since: number } | null = null;

  const runCheck = () => {
    if (!inFlight) {
      const answer = Promise.resolve()
        .then(() => options.check())
        .then(
          () => true,
          (error: unknown) => {
            options.onFailure?.(error);
            return false;
          },
        )
        .finally(() => {
          if (inFlight?.answer === answer) inFlight = null;
        });
      inFlight = { answer, since: performance.now() };
    }
    return inFlight;
  };

  /** A probe waits at most until the shared check has had `timeoutMs` to answer. */
  const answered = (): Promise<boolean> => {
    const { answer, since } = runCheck();
    const remaining = timeoutMs - (performance.now() - since);
    if (remaining <= 0) return Promise.resolve(false);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), remaining);
    });
    return Promise.race([answer, timedOut]).finally(() => clearTimeout(timer));
  };

  return {
    method: '*',
    path: options.path ?? '/ready',
    async handler({ Response }) {
      const ready = await answered();
      const body = ready ? { status: 'ready' } : { status: 'not-ready', reason: NOT_READY_REASON };
      return new Response(JSON.stringify(body), {
        status: ready ? 200 : 503,
        headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
      });
    },
  };
}
