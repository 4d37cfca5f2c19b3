import type { IncomingMessage } from 'node:http';
import {
  type DocumentNode,
  type ExecutionResult,
  GraphQLError,
  getOperationAST,
  Kind,
  type SelectionNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Principal } from '../src/auth/index.js';
import type { CredentialAttemptGate } from './useFairwayAuth.js';

/** Which limit refused, for the message and `extensions.limit`. */
export type RateLimitName = 'token' | 'tenant' | 'anonymous' | 'credential-failures';

export interface RateLimitRefusal {
  limit: RateLimitName;
  /** Whole seconds until the bucket has room again (at least 1). */
  retryAfterSeconds: number;
}

/** Who pays for a request. */
export type ChargeSubject =
  | { kind: 'principal'; principalKey: string; isPlatformAdmin: boolean; tenantIds: string[] }
  | { kind: 'anonymous'; ip: string };

/** The buckets this plugin charges (src/server/rate-limits/limiter.ts's RateLimiter is one). */
export interface RateLimitBuckets {
  readonly config: { readonly enabled: boolean };
  /** Takes `points` from every bucket the subject pays into; the first refusal, or null when allowed. */
  charge(subject: ChargeSubject, points: number): Promise<RateLimitRefusal | null>;
  /** Whether this IP may present a credential now (not after too many failures). */
  credentialAttemptAllowed(ip: string): Promise<RateLimitRefusal | null>;
  /** Counts a credential from this IP that failed verification. */
  credentialFailed(ip: string): Promise<void>;
}

/** Where a request comes from: yoga's node request over HTTP, the upgrade request over WebSocket. */
export interface RequestSource {
  req?: IncomingMessage;
  request?: Request;
}

export interface RateLimitsOptions {
  limiter: RateLimitBuckets;
  /** The client's address, for anonymous callers and failed credentials
   * (src/server/rate-limits/client-address.ts).
   */
  clientAddress: (source: RequestSource) => string;
  logError: (error: unknown) => void;
}

/** What the envelop context holds that matters here (HTTP: yoga's node server context; WebSocket: see
 * src/server/websocket/websocket.ts).
 */
interface RateContext extends RequestSource {
  currentUser?: Principal | null;
}

/** What an operation costs: writes (a mutation, previewJob among them) cost more than reads. */
export const OPERATION_COST = { query: 1, subscription: 1, mutation: 3 } as const;

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
  const { limiter, clientAddress } = options;
  if (!limiter.config.enabled) return {};

  const chargeOrRefuse = async (
    context: RateContext,
    document: DocumentNode,
    operationName: string | null | undefined,
    variables?: Record<string, unknown> | null,
  ): Promise<ExecutionResult | null> => {
    const refused = await limiter.charge(
      subjectOf(context, clientAddress),
      operationCost(document, operationName, variables),
    );
    return refused ? { errors: [refusalError(refused, isHttp(context))] } : null;
  };

  return {
    onEnveloped({ context, extendContext }) {
      if (!context) return;
      const rateContext = context as RateContext;
      const gate: CredentialAttemptGate = {
        async beforeAttempt() {
          const refused = await limiter.credentialAttemptAllowed(clientAddress(rateContext));
          if (refused) throw refusalError(refused, isHttp(rateContext));
        },
        failed: () => limiter.credentialFailed(clientAddress(rateContext)),
      };
      extendContext({ credentialAttempts: gate } as never);
    },
    async onExecute({ args, setResultAndStopExecution }) {
      const refusal = await chargeOrRefuse(
        args.contextValue as RateContext,
        args.document,
        args.operationName,
        args.variableValues as Record<string, unknown> | undefined,
      );
      if (refusal) setResultAndStopExecution(refusal);
    },
    async onSubscribe({ args, setResultAndStopExecution }) {
      const refusal = await chargeOrRefuse(
        args.contextValue as RateContext,
        args.document,
        args.operationName,
      );
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
export function operationCost(
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
): number {
  const operation = getOperationAST(document, operationName);
  if (!operation) return OPERATION_COST.query;
  if (operation.operation !== 'mutation') return OPERATION_COST[operation.operation];
  const fragments = new Map(
    document.definitions.flatMap((d) =>
      d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d] as const] : [],
    ),
  );
  let jobs = 0;
  const walk = (selections: readonly SelectionNode[], seen: Set<string>): void => {
    for (const selection of selections) {
      if (selection.kind === Kind.INLINE_FRAGMENT) walk(selection.selectionSet.selections, seen);
      else if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const fragment = fragments.get(selection.name.value);
        if (fragment && !seen.has(fragment.name.value))
          walk(fragment.selectionSet.selections, new Set([...seen, fragment.name.value]));
      } else if (selection.name.value === 'submitJobs') {
        const arg = selection.arguments?.find((a) => a.name.value === 'jobs')?.value;
        const value =
          arg?.kind === Kind.LIST
            ? arg.values
            : arg?.kind === Kind.VARIABLE
              ? variables?.[arg.name.value]
              : undefined;
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
function subjectOf(context: RateContext, clientAddress: (source: RequestSource) => string): ChargeSubject {
  const principal = context.currentUser;
  if (!principal) return { kind: 'anonymous', ip: clientAddress(context) };
  const tenantIds = principal.token
    ? principal.token.tenantId
      ? [principal.token.tenantId]
      : []
    : principal.roles.size === 1
      ? [...principal.roles.keys()]
      : [];
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
