import { decodeGlobalID, encodeGlobalID, type ResolveCursorConnectionArgs } from '@pothos/plugin-relay';
import { GraphQLError, Kind } from 'graphql';
import { z } from 'zod';
import { AUDIT_OUTCOMES } from '../src/persistence/audit/index.js';
import { isUuid } from '../src/persistence/ids.js';
import { WORKLOAD_KINDS } from '../src/persistence/jobs/index.js';
import {
  type ISOLATION_LEVELS,
  PROJECT_STATUSES,
  type TENANT_ROLES,
  TENANT_STATUSES,
  TENANT_TIERS,
} from '../src/persistence/tenancy/index.js';
import { SLA_CLASSES, WORKLOAD_TYPES } from '../src/services/governance/index.js';
import type { PageQuery } from '../src/services/paging.js';
import { CAPABILITIES, PLATFORM_SCOPE } from '../src/services/tenancy/index.js';
import { badInput, notFound } from '../src/shared/index.js';
import { builder } from './builder.js';

builder.scalarType('DateTime', {
  description: 'An instant in time, ISO-8601 with time zone (e.g. 2026-11-30T09:00:00Z).',
  serialize: (value) =>
    value instanceof Date ? value.toISOString() : new Date(value as string).toISOString(),
  parseValue: (value) => {
    const date = typeof value === 'string' ? new Date(value) : null;
    if (!date || Number.isNaN(date.getTime())) {
      throw new GraphQLError('DateTime must be an ISO-8601 string such as 2026-11-30T09:00:00Z', {
        extensions: { code: 'BAD_USER_INPUT' },
      });
    }
    return date;
  },
  parseLiteral: (ast) => {
    const date = ast.kind === Kind.STRING ? new Date(ast.value) : null;
    if (!date || Number.isNaN(date.getTime())) {
      throw new GraphQLError('DateTime must be an ISO-8601 string such as 2026-11-30T09:00:00Z', {
        extensions: { code: 'BAD_USER_INPUT' },
      });
    }
    return date;
  },
});

builder.scalarType('JSON', {
  description: 'Arbitrary JSON, read-only (audit inputs).',
  serialize: (value) => value,
  parseValue: (value) => value,
});

export const TenantTierEnum = builder.enumType('TenantTier', { values: TENANT_TIERS });
export const IsolationLevelEnum = builder.enumType('IsolationLevel', {
  description: "One knob over a tenant's quota limits; see the scheduling design.",
  values: {
    DEDICATED: { description: 'Own pool; lends and borrows nothing.' },
    GUARANTEED: { description: 'Lends idle nominal quota and reclaims it at once.' },
    ELASTIC: { description: 'Lends and borrows within its cohort.' },
    BEST_EFFORT: { description: 'No nominal quota; only borrows and is first to be preempted.' },
  } satisfies Record<(typeof ISOLATION_LEVELS)[number], unknown>,
});
export const TenantStatusEnum = builder.enumType('TenantStatus', { values: TENANT_STATUSES });
/** Governance: what a job (declared at submit) or a queue runs; shared by Job, Queue and the policy rules. */
export const WorkloadTypeEnum = builder.enumType('WorkloadType', { values: WORKLOAD_TYPES });
export const WorkloadKindEnum = builder.enumType('WorkloadKind', {
  values: WORKLOAD_KINDS,
  description:
    'The workload controller that runs a job on Kubernetes (other backends run every kind as pods).',
});
export const SlaClassEnum = builder.enumType('SlaClass', {
  values: SLA_CLASSES,
  description:
    "A queue's service level: with its workload type and its tenant's tier it chooses the queue's isolation policy.",
});
export const TenantRoleEnum = builder.enumType('TenantRole', {
  values: {
    TENANT_ADMIN: { description: 'Manages members, projects, tokens; reads the audit log.' },
    MEMBER: { description: 'Uses the tenant: submits and manages jobs.' },
    VIEWER: { description: 'Reads, changes nothing.' },
    AUDITOR: { description: 'Reads, including the audit log; changes nothing.' },
  } satisfies Record<(typeof TENANT_ROLES)[number], unknown>,
});
export const ProjectStatusEnum = builder.enumType('ProjectStatus', { values: PROJECT_STATUSES });
export const AuditOutcomeEnum = builder.enumType('AuditOutcome', { values: AUDIT_OUTCOMES });

/** Token scopes as GraphQL enum values: `jobs:write` ↔ JOBS_WRITE. */
export const scopeToEnum = (scope: string) => scope.replace(':', '_').toUpperCase();
export const ApiTokenScopeEnum = builder.enumType('ApiTokenScope', {
  description: `What an API token may do, always within its owner's role in the token's tenant. (A token without a tenant is a platform token; it has no scopes and acts as its platform-admin owner: "${PLATFORM_SCOPE}".)`,
  values: Object.fromEntries(CAPABILITIES.map((c) => [scopeToEnum(c), { value: c }])) as Record<
    string,
    { value: (typeof CAPABILITIES)[number] }
  >,
});

// Limits shared by inputs, phrased so a person can act on them.
export const slugSchema = z
  .string()
  .regex(
    /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/,
    'use 1-63 lowercase letters, digits and dashes, starting and ending with a letter or digit',
  );
export const nameSchema = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters');
export const emailSchema = z
  .string()
  .max(254, 'must be at most 254 characters')
  .email('must be an e-mail address');
export const descriptionSchema = z.string().max(2000, 'must be at most 2000 characters');

/**
 * Turns a global ID argument into a database id. A malformed ID is the caller's mistake
 * (BAD_USER_INPUT); a well-formed ID of another type, or of nothing, is NOT_FOUND.
 */
export function decodeId(globalId: string, typename: string, what: string = typename): string {
  let decoded: { typename: string; id: string };
  try {
    decoded = decodeGlobalID(globalId);
  } catch {
    throw badInput(`"${truncate(globalId)}" is not a valid ID.`);
  }
  if (!decoded.typename || !decoded.id || encodeGlobalID(decoded.typename, decoded.id) !== globalId) {
    throw badInput(`"${truncate(globalId)}" is not a valid ID.`);
  }
  if (decoded.typename !== typename || !isUuid(decoded.id)) throw notFound(what);
  return decoded.id;
}

function truncate(value: string): string {
  return value.length > 40 ? `${value.slice(0, 40)}…` : value;
}

/** Connection cursors are opaque: base64url of the row id. */
export const toCursor = (row: { id: string }) => Buffer.from(row.id, 'utf8').toString('base64url');

export function pageFrom(args: ResolveCursorConnectionArgs): PageQuery {
  return {
    after: decodeCursor(args.after),
    before: decodeCursor(args.before),
    limit: args.limit,
    inverted: args.inverted,
  };
}

function decodeCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!isUuid(id)) throw badInput(`"${truncate(cursor)}" is not a cursor from this list.`);
  return id;
}

export const JobStateEnum = builder.enumType('JobState', {
  values: {
    PENDING: { description: 'Waiting for quota or room (see pendingReason and position).' },
    ADMITTED: { description: 'Quota reserved and pods placed; starting on the backend.' },
    RUNNING: { description: 'Running on the backend.' },
    SUCCEEDED: {},
    FAILED: { description: 'See exitReason.' },
    CANCELLED: {},
  } as const,
});
