import type { IncomingMessage } from 'node:http';
import { getOperationAST, GraphQLError, Kind, type DocumentNode, type ExecutionResult, type SelectionNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Principal } from '../src/auth/principal.js';
import { OPERATION_COST, type ChargeSubject, type RateLimiter, type RateLimitRefusal } from '../src/server/rate-limits/limiter.js';
import type { CredentialAttemptGate } from './useFairwayAuth.js';

export interface RateLimitsOptions {
  limiter: RateLimiter;
  logError: (error: unknown) => void;
}

/** What the envelop context holds that matters here (HTTP: yoga's node server context; WebSocket: see src/server/websocket/websocket.ts). */
interface RateContext {
  req?: IncomingMessage;
  request?: Request;
  currentUser?: Principal | null;
}

/**
 * Placed right after useFairwayAuth: sees the principal in the context.
 *
 * - Before any credential is verified (the gate useFairwayAuth calls), an IP that failed too
 *   many is refused; each failure is counted.
 * - Before an operation executes, or a subscription starts (its events are free), the caller
 *   pays its cost into its buckets (src/server/rate-limits/limiter.ts); a refusal stops it there: no
 *   resolver runs, so nothing is written or audited.
 *
 * A refusal is RATE_LIMITED with `retryAfterSeconds` and `limit`, over HTTP a 429 with
 * `Retry-After`.
 */
export function useRateLimits(options: RateLimitsOptions): Plugin {
  const { limiter } = options;
  if (!limiter.config.enabled) return {};
  const hops = limiter.config.trustProxyHops;

  const chargeOrRefuse = async (context: RateContext, document: DocumentNode, operationName: string | null | undefined, variables?: Record<string, unknown> | null): Promise<ExecutionResult | null> => {
    const refused = await limiter.charge(subjectOf(context, hops), operationCost(document, operationName, variables));
    return refused ? { errors: [refusalError(refused, isHttp(context))] } : null;
  };

  return {
    onEnveloped({ context, extendContext }) {
      if (!context) return;
      const rateContext = context as RateContext;
      const gate: CredentialAttemptGate = {
        async beforeAttempt() {
          const refused = await limiter.credentialAttemptAllowed(clientIpOf(rateContext, hops));
          if (refused) throw refusalError(refused, isHttp(rateContext));
        },
        failed: () => limiter.credentialFailed(clientIpOf(rateContext, hops)),
      };
      extendContext({ credentialAttempts: gate } as never);
    },
    async onExecute({ args, setResultAndStopExecution }) {
      const refusal = await chargeOrRefuse(args.contextValue as RateContext, args.document, args.operationName, args.variableValues as Record<string, unknown> | undefined);
      if (refusal) setResultAndStopExecution(refusal);
    },
    async onSubscribe({ args, setResultAndStopExecution }) {
      const refusal = await chargeOrRefuse(args.contextValue as RateContext, args.document, args.operationName);
      if (refusal) setResultAndStopExecution(refusal);
    },
  };
}

/**
 * submitJobs (batch submit) pays one more point per this many jobs on top of the mutation's 3,
 * so a 1,000-job call costs 103: a batch is still ~30 times cheaper per job than submitJob
 * (its server cost per job is far lower), yet a token's 200-point burst is two such calls, not 200.
 */
export const JOBS_PER_BATCH_POINT = 10;

/**
 * The points an operation costs (OPERATION_COST). Top-level submitJobs fields (aliases and
 * fragments included) add their jobs' share, counted in the literal list or the variable
 * before the operation runs (a malformed one then fails validation, having paid this).
 */
export function operationCost(document: DocumentNode, operationName: string | null | undefined, variables: Record<string, unknown> | null | undefined): number {
  const operation = getOperationAST(document, operationName);
  if (!operation) return OPERATION_COST.query;
  if (operation.operation !== 'mutation') return OPERATION_COST[operation.operation];
  const fragments = new Map(document.definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d] as const] : [])));
  let jobs = 0;
  const walk = (selections: readonly SelectionNode[], seen: Set<string>): void => {
    for (const selection of selections) {
      if (selection.kind === Kind.INLINE_FRAGMENT) walk(selection.selectionSet.selections, seen);
      else if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const fragment = fragments.get(selection.name.value);
        if (fragment && !seen.has(fragment.name.value)) walk(fragment.selectionSet.selections, new Set([...seen, fragment.name.value]));
      } else if (selection.name.value === 'submitJobs') {
        const arg = selection.arguments?.find((a) => a.name.value === 'jobs')?.value;
        const value = arg?.kind === Kind.LIST ? arg.values : arg?.kind === Kind.VARIABLE ? variables?.[arg.name.value] : undefined;
        if (Array.isArray(value)) jobs += value.length;
      }
    }
  };
  walk(operation.selectionSet.selections, new Set());
  return OPERATION_COST.mutation + Math.ceil(jobs / JOBS_PER_BATCH_POINT);
}

/**
 * Who pays: the principal (API token, else user) and its tenant. A user in several tenants
 * pays only into their own bucket: which tenant an operation touches is known only inside
 * the resolvers, and charging every one of them would let one consultant's traffic slow all
 * their clients. Platform tokens and admins pay into the (larger) admin bucket.
 */
function subjectOf(context: RateContext, hops: number): ChargeSubject {
  const principal = context.currentUser;
  if (!principal) return { kind: 'anonymous', ip: clientIpOf(context, hops) };
  const tenantIds = principal.token ? (principal.token.tenantId ? [principal.token.tenantId] : []) : principal.roles.size === 1 ? [...principal.roles.keys()] : [];
  return {
    kind: 'principal',
    principalKey: principal.token ? `token:${principal.token.id}` : `user:${principal.userId}`,
    isPlatformAdmin: principal.isPlatformAdmin,
    tenantIds,
  };
}

/** WebSocket contexts have no Fetch request; yoga turns `extensions.http` into the HTTP status and headers and drops it from the body. */
const isHttp = (context: RateContext) => context.request !== undefined;

const LIMIT_TEXT: Record<RateLimitRefusal['limit'], string> = {
  token: "this token's (or user's) request rate",
  tenant: "this tenant's request rate",
  anonymous: 'the request rate for unauthenticated clients from this address',
  'credential-failures': 'too many failed credentials from this address',
};

export function refusalError(refusal: RateLimitRefusal, http: boolean): GraphQLError {
  const seconds = refusal.retryAfterSeconds;
  return new GraphQLError(`Rate limited: ${LIMIT_TEXT[refusal.limit]} is exhausted; retry in ${seconds} s.`, {
    extensions: {
      code: 'RATE_LIMITED',
      limit: refusal.limit,
      retryAfterSeconds: seconds,
      ...(http ? { http: { status: 429, headers: { 'retry-after': String(seconds) } } } : {}),
    },
  });
}

/**
 * The client's address: the socket's peer, or, behind `hops` trusted reverse proxies, the
 * X-Forwarded-For entry the outermost trusted proxy saw (as Express's `trust proxy` = N). The
 * entries left of it are whatever the client claimed and are never believed.
 */
export function clientIpOf(context: RateContext, hops: number): string {
  const peer = context.req?.socket?.remoteAddress ?? 'unknown';
  if (hops <= 0) return normalizeIp(peer);
  const header = context.req?.headers['x-forwarded-for'] ?? context.request?.headers.get('x-forwarded-for') ?? '';
  const forwarded = (Array.isArray(header) ? header.join(',') : header)
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  const chain = [peer, ...forwarded.reverse()];
  return normalizeIp(chain[Math.min(hops, chain.length - 1)]!);
}

/** IPv4 clients of a dual-stack socket show as ::ffff:a.b.c.d; one client, one key. */
const normalizeIp = (ip: string) => ip.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, '$1').toLowerCase();
