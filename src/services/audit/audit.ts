import { type EntityManager, UniqueConstraintViolationException } from '@mikro-orm/core';
import { canSeeTenant } from '../../auth/index.js';
import { AuditEvent, type AuditOutcome } from '../../persistence/audit/index.js';
import { uuidv7 } from '../../persistence/ids.js';
import { Tenant, User } from '../../persistence/tenancy/index.js';
import { conflict, FairwayError } from '../../shared/index.js';
import { checkedTenant, type ServiceContext } from '../context.js';

/** Input keys whose values never reach the audit log. */
const SECRET_KEYS = /secret|password|token$|key$/i;

export function redact(input: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined) continue;
    if (SECRET_KEYS.test(key)) out[key] = '[redacted]';
    else if (value && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date))
      out[key] = redact(value as Record<string, unknown>);
    else out[key] = value;
  }
  return out;
}

export interface MutationOutcome<T> {
  result: T;
  tenantId: string | null;
  targetType: string;
  targetId: string;
}

export interface MutationMeta {
  action: string;
  input: Record<string, unknown>;
  /** The tenant the caller aimed at, if known before the work ran (for refused attempts). */
  tenantHint?: string | null;
}

/**
 * Runs one mutation in a transaction together with its audit event: either both are
 * written or neither. A refused or failed attempt is audited afterwards on its own,
 * and only under a tenant the caller may see (so a probe of another tenant's ids is
 * visible to platform admins, not to that tenant's auditors as a leak of the prober).
 */
export async function auditedMutation<T>(
  ctx: ServiceContext,
  meta: MutationMeta,
  work: (em: EntityManager) => Promise<MutationOutcome<T>>,
): Promise<T> {
  let committed: { result: T; tenantId: string | null; auditEventId: string };
  const checked = { tenantId: null as string | null };
  try {
    committed = await checkedTenant.run(checked, () =>
      ctx.em.transactional(async (em) => {
        const outcome = await work(em);
        const event = buildEvent(
          em,
          ctx,
          meta,
          'SUCCESS',
          outcome.tenantId,
          outcome.targetType,
          outcome.targetId,
          null,
        );
        em.persist(event);
        await em.flush();
        return { result: outcome.result, tenantId: outcome.tenantId, auditEventId: event.id };
      }),
    );
  } catch (error) {
    throw await auditedFailure(ctx, meta, error, checked.tenantId);
  }
  // Announced only after commit: a subscriber never hears of a change that rolled back.
  if (committed.tenantId)
    ctx.events.publish('audit-event', committed.tenantId, { auditEventId: committed.auditEventId });
  return committed.result;
}

/** A refused or failed attempt, audited on its own; returns the error to throw. */
export async function auditedFailure(
  ctx: ServiceContext,
  meta: MutationMeta,
  error: unknown,
  checkedTenantId: string | null,
): Promise<unknown> {
  const mapped =
    error instanceof UniqueConstraintViolationException
      ? conflict('That conflicts with something that already exists (a duplicate name or slug).')
      : error;
  if (mapped instanceof FairwayError && ctx.principal) {
    const outcome: AuditOutcome =
      mapped.code === 'FORBIDDEN' || mapped.code === 'NOT_FOUND' || mapped.code === 'UNAUTHENTICATED'
        ? 'DENIED'
        : 'FAILED';
    const recorded = await ctx.em.fork().transactional(async (em) => {
      // A hint may name a tenant that does not exist (a made-up id): file it under none.
      // Without a hint, the tenant whose rights the work checked (the caller may see it).
      const hint = meta.tenantHint ?? checkedTenantId;
      const visible = hint && canSeeTenant(ctx.principal, hint) ? hint : null;
      const tenantId =
        visible && (await em.count(Tenant, { id: visible }, { filters: false })) > 0 ? visible : null;
      const event = buildEvent(em, ctx, meta, outcome, tenantId, null, null, mapped.code);
      em.persist(event);
      return { tenantId, event };
    });
    // Streamed like a committed change (auditEventRecorded: each audit event of the tenant); the id is
    // the flush's.
    if (recorded.tenantId)
      ctx.events.publish('audit-event', recorded.tenantId, { auditEventId: recorded.event.id });
  }
  return mapped;
}

function buildEvent(
  em: EntityManager,
  ctx: ServiceContext,
  meta: MutationMeta,
  outcome: AuditOutcome,
  tenantId: string | null,
  targetType: string | null,
  targetId: string | null,
  errorCode: string | null,
): AuditEvent {
  const row = auditEventRow(ctx, meta, outcome, tenantId, targetType, targetId, errorCode);
  return em.create(AuditEvent, {
    ...row,
    tenant: tenantId ? em.getReference(Tenant, tenantId) : null,
    actor: ctx.principal ? em.getReference(User, ctx.principal.userId) : null,
  } as never);
}

/**
 * An audit event's row, relations as ids: for a bulk insert (bound-sql.ts insertRows, the group commit)
 * as it is, and for the entity (buildEvent) with references in place of the ids.
 */
export function auditEventRow(
  ctx: ServiceContext,
  meta: MutationMeta,
  outcome: AuditOutcome,
  tenantId: string | null,
  targetType: string | null,
  targetId: string | null,
  errorCode: string | null = null,
): Record<string, unknown> {
  return {
    id: uuidv7(),
    tenant: tenantId,
    actor: ctx.principal?.userId ?? null,
    actorTokenId: ctx.principal?.token?.id ?? null,
    action: meta.action,
    targetType,
    targetId,
    input: underBreakGlass(ctx, tenantId, redact(meta.input)),
    outcome,
    errorCode,
    requestId: ctx.requestId,
    createdAt: ctx.now(),
  };
}

/** A platform admin's change inside a tenant is made under a break-glass grant: the event names it. */
function underBreakGlass(
  ctx: ServiceContext,
  tenantId: string | null,
  input: Record<string, unknown>,
): Record<string, unknown> {
  const principal = ctx.principal;
  if (!tenantId || !principal?.isPlatformAdmin || principal.roles.has(tenantId)) return input;
  const grant = principal.breakGlass.get(tenantId);
  return grant ? { ...input, breakGlassGrantId: grant.grantId } : input;
}
