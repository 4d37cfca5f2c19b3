import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Plugin } from 'graphql-yoga';

export interface CallerConcurrencyOptions {
  /** Requests of one caller executed at once; the next ones wait their turn. */
  maxInFlight: number;
  /** Requests of one caller waiting their turn; past it they are refused RATE_LIMITED at once. */
  maxQueued: number;
  /** A request that waited this long is refused RATE_LIMITED. */
  maxWaitMs: number;
  /** The client's address, the key of anonymous callers (src/server/rate-limits/client-address.ts: the
   * trusted proxies' X-Forwarded-For).
   */
  clientAddress: (source: { req?: IncomingMessage; request?: Request }) => string;
  /** Only requests to this path are counted (health, metrics and exports are not). */
  graphqlEndpoint: string;
}

interface CallerSlots {
  active: number;
  waiting: Array<(admitted: boolean) => void>;
}

/**
 * One caller's requests take turns: at most `maxInFlight` execute at once, the next
 * `maxQueued` wait in order, more are refused at once. The rate limits (useRateLimits) bound
 * how much a caller may ask for over seconds; this bounds how much it holds at one moment
 * (requests in execution, each with its EntityManager and loaders), so 1,000 parallel
 * connections of one token are 4 executions and a queue, not 1,000. Waiting, not refusing, is
 * what slows a closed-loop client down without it spinning on cheap refusals. It does not by
 * itself keep another tenant fast while the server's thread is saturated: see bench:flood in
 * bench/RESULTS.md.
 *
 * The caller is keyed before anything is looked up, by a hash of the presented credential
 * (anonymous: the client address), so neither the wait nor a refusal costs a database query;
 * a forged credential only queues behind itself. Subscriptions over SSE hold a slot until
 * their response starts, not for their lifetime.
 */
export function useCallerConcurrency(options: CallerConcurrencyOptions): Plugin {
  const callers = new Map<string, CallerSlots>();
  const releases = new WeakMap<Request, () => void>();

  const keyOf = (request: Request, req: IncomingMessage | undefined): string => {
    const credential = request.headers.get('authorization');
    if (credential) return `c:${createHash('sha256').update(credential).digest('base64url').slice(0, 22)}`;
    return `a:${options.clientAddress({ req, request })}`;
  };

  const releaserFor = (key: string, slots: CallerSlots) => {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = slots.waiting.shift();
      if (next)
        next(true); // the slot passes to the next waiter
      else if (--slots.active === 0) callers.delete(key);
    };
  };

  return {
    async onRequest({ request, url, serverContext, endResponse }) {
      if (url.pathname !== options.graphqlEndpoint || request.method === 'OPTIONS') return;
      const { req, res } = serverContext as { req?: IncomingMessage; res?: ServerResponse };
      const key = keyOf(request, req);
      let slots = callers.get(key);
      if (!slots) callers.set(key, (slots = { active: 0, waiting: [] }));
      if (slots.active < options.maxInFlight) {
        slots.active++;
      } else if (slots.waiting.length >= options.maxQueued) {
        endResponse(refused('too many requests of this caller are already waiting'));
        return;
      } else {
        const waitingSlots = slots;
        const admitted = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => settle(false), options.maxWaitMs);
          const onGone = () => settle(false);
          req?.once('close', onGone);
          function settle(ok: boolean) {
            clearTimeout(timer);
            req?.off('close', onGone);
            const at = waitingSlots.waiting.indexOf(settle);
            if (at >= 0) waitingSlots.waiting.splice(at, 1);
            resolve(ok);
          }
          // A releasing request hands its slot over by calling this with true.
          waitingSlots.waiting.push(settle);
        });
        if (!admitted) {
          endResponse(refused('this caller has waited too long for its earlier requests'));
          return;
        }
      }
      const release = releaserFor(key, slots);
      releases.set(request, release);
      // onResponse releases the slot; a connection that goes away first releases it too.
      res?.once('close', release);
    },
    onResponse({ request }) {
      releases.get(request)?.();
    },
  };
}

function refused(why: string): Response {
  const body = JSON.stringify({
    errors: [
      {
        message: `Rate limited: ${why}; retry in 1 s.`,
        extensions: { code: 'RATE_LIMITED', limit: 'concurrency', retryAfterSeconds: 1 },
      },
    ],
  });
  return new Response(body, {
    status: 429,
    headers: { 'content-type': 'application/graphql-response+json; charset=utf-8', 'retry-after': '1' },
  });
}
