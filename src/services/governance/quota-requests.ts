// Quota requests and approvals. A tenant admin asks for one nominal quota of one of the
// tenant's queues to change (for good, from a start, or until an expiry), with a justification;
// platform admins approve or reject; the tenant's admins may cancel while it has not applied.
// Approval applies the change in the same transaction as the status and the audit entry; the
// leader's task (quota-expiry.ts) activates future ones and undoes temporary ones.
//
// Who requests: tenant admins only, not platform admins. A platform admin changes a quota directly
// (setQuota, audited); a request of theirs would be approved by themselves, which is no approval.
// For the same reason nobody approves a request they made (someone who is both a tenant admin and
// a platform admin asks another platform admin).
import { z } from 'zod';
import { Flavor, Queue } from '../../persistence/cluster/index.js';
import {
  QUOTA_REQUEST_STATUSES,
  QuotaRequest,
  type QuotaRequestStatus,
} from '../../persistence/governance/index.js';
import { Tenant } from '../../persistence/tenancy/index.js';
import { badInput, conflict, forbidden, notFound } from '../../shared/index.js';
import { auditedMutation } from '../audit/index.js';
import {
  type Principal,
  requireCapability,
  requirePlatformAdmin,
  requirePrincipal,
  type ServiceContext,
  withoutReadNotes,
} from '../context.js';
import { schedulerInputError } from '../errors.js';
import { queueSpec } from '../scheduling/index.js';
import { governanceForQueueWrite } from './policies.js';
import {
  announceRequest,
  applyRequest,
  nominalIn,
  type QueueChange,
  reloadRequest,
  transition,
} from './quota-request-apply.js';

export { getQuotaRequest, listQuotaRequests, personOnRequest } from './quota-request-reads.js';
export { QUOTA_REQUEST_STATUSES, type QuotaRequestStatus };
export type ResourceName = 'gpu' | 'cpu' | 'memory';

export interface RequestQuotaChangeInput {
  queueId: string;
  flavor: string;
  resource?: ResourceName | null;
  nominal: number;
  startsAt?: Date | null;
  expiresAt?: Date | null;
  justification: string;
}

const MAX_TEXT = 2000;
const inputSchema = z.object({
  flavor: z.string().trim().min(1, 'must not be empty').max(63, 'must be at most 63 characters'),
  resource: z.enum(['gpu', 'cpu', 'memory']),
  nominal: z
    .number()
    .finite('must be a finite number')
    .min(0, 'must not be negative')
    .max(1e9, 'is too large'),
  justification: z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .max(MAX_TEXT, `must be at most ${MAX_TEXT} characters`),
});

function problemsOf(error: z.ZodError): string[] {
  return error.issues.map((issue) => `${issue.path.join('.') || 'input'}: ${issue.message}`);
}

function validated(input: RequestQuotaChangeInput, now: Date): z.infer<typeof inputSchema> {
  const parsed = inputSchema.safeParse({ ...input, resource: input.resource ?? 'gpu' });
  const problems = parsed.success ? [] : problemsOf(parsed.error);
  const starts = input.startsAt ?? null;
  if (input.expiresAt) {
    if (input.expiresAt.getTime() <= now.getTime()) problems.push('expiresAt: must be in the future');
    else if (starts && input.expiresAt.getTime() <= starts.getTime())
      problems.push('expiresAt: must be after startsAt');
  }
  if (problems.length || !parsed.success)
    throw badInput(`Invalid quota request: ${problems.join('; ')}`, { problems });
  return parsed.data;
}

/**
 * Tenant admins of the tenant (their token needs projects:write, the scope of tenant-wide changes).
 * Outside the tenant: NOT_FOUND, as for a queue that does not exist.
 */
function requireTenantAdminRequester(ctx: ServiceContext, tenantId: string, what: string): Principal {
  const principal = requirePrincipal(ctx);
  if (principal.isPlatformAdmin && !principal.roles.has(tenantId) && !principal.token?.tenantId) {
    throw forbidden(
      "Quota requests are made and cancelled by the tenant's admins; platform admins approve or reject them, or set a quota directly (setQuota).",
    );
  }
  requireCapability(withoutReadNotes(ctx), tenantId, 'projects:write', what);
  if (principal.roles.get(tenantId) !== 'TENANT_ADMIN')
    throw forbidden('Only tenant admins may request quota changes or cancel requests.');
  return principal;
}

/** Tenant admins request a change of one nominal quota of one of their queues. Audited; PENDING until a
 * platform admin decides.
 */
export async function requestQuotaChange(
  ctx: ServiceContext,
  input: RequestQuotaChangeInput,
): Promise<QuotaRequest> {
  const auditInput: Record<string, unknown> = { ...input, resource: input.resource ?? 'gpu' };
  const created = await auditedMutation(
    ctx,
    { action: 'quotaRequest.create', input: auditInput },
    async (em) => {
      const queue = await em.findOne(Queue, { id: input.queueId });
      if (!queue) throw notFound('Queue');
      const principal = requireTenantAdminRequester(ctx, queue.tenant.id, 'Queue');
      const now = ctx.now();
      const valid = validated(input, now);
      const resource = valid.resource;
      if (!(valid.flavor in queue.quotas) && (await em.count(Flavor, { name: valid.flavor })) === 0)
        throw badInput(`Unknown flavor "${valid.flavor}".`);
      const current = nominalIn(queue.quotas, valid.flavor, resource);
      if (current === valid.nominal)
        throw badInput(
          `The queue's ${resource} nominal on ${valid.flavor} is already ${current}: request a different amount.`,
        );
      auditInput.currentNominal = current;
      const request = em.create(QuotaRequest, {
        tenant: queue.tenant.id,
        queue: queue.id,
        flavor: valid.flavor,
        resource,
        nominal: valid.nominal,
        previousNominal: null,
        startsAt: input.startsAt ?? null,
        expiresAt: input.expiresAt ?? null,
        justification: valid.justification,
        status: 'PENDING',
        requestedBy: principal.userId,
        decidedBy: null,
        decisionNote: null,
        decidedAt: null,
        appliedAt: null,
        endedAt: null,
      });
      await em.flush();
      return { result: request, tenantId: queue.tenant.id, targetType: 'QuotaRequest', targetId: request.id };
    },
  );
  announceRequest(
    ctx.events,
    {
      requestId: created.id,
      tenantId: created.tenant.id,
      queueId: created.queue.id,
      status: 'PENDING',
      quotaChanged: false,
    },
    ctx.now().getTime(),
  );
  return created;
}

const noteSchema = z.string().trim().max(MAX_TEXT, `must be at most ${MAX_TEXT} characters`);

function validNote(note: string | null | undefined, required: boolean): string | null {
  const parsed = noteSchema.safeParse(note ?? '');
  if (!parsed.success) throw badInput(`Invalid note: ${problemsOf(parsed.error).join('; ')}`);
  if (required && !parsed.data)
    throw badInput('Invalid note: a rejection says why (note must not be empty).');
  return parsed.data || null;
}

/** A platform admin's decision on a request made by someone else. */
async function decidable(
  ctx: ServiceContext,
  em: ServiceContext['em'],
  id: string,
  verb: string,
): Promise<{ principal: Principal; request: QuotaRequest }> {
  const principal = requirePlatformAdmin(ctx);
  const request = await em.findOne(QuotaRequest, { id });
  if (!request) throw notFound('QuotaRequest');
  if (request.requestedBy?.id === principal.userId)
    throw forbidden(`You made this request: another platform admin must ${verb} it.`);
  if (request.status !== 'PENDING')
    throw conflict(`This request is ${request.status}; only a PENDING request can be ${verb}d.`);
  return { principal, request };
}

const lostRace = (verb: string) =>
  conflict(`This request was decided or cancelled meanwhile; it can no longer be ${verb}d.`);

/**
 * Platform admins approve: at once (ACTIVE: the queue's nominal is set in this transaction, after
 * the new queue passed the core's validation) or, with a future startsAt, APPROVED until the
 * leader activates it. Approving anything but a PENDING request is a CONFLICT and changes nothing.
 */
export async function approveQuotaRequest(
  ctx: ServiceContext,
  id: string,
  note?: string | null,
): Promise<QuotaRequest> {
  // Built before the transaction: SQLite has one connection, which the transaction holds.
  const core = await ctx.scheduler.configSnapshot();
  const auditInput: Record<string, unknown> = { id, note: note ?? null };
  let change: QueueChange | null = null;
  const approved = await auditedMutation(
    ctx,
    { action: 'quotaRequest.approve', input: auditInput },
    async (em) => {
      const { principal, request } = await decidable(ctx, em, id, 'approve');
      const decisionNote = validNote(note, false);
      const now = ctx.now();
      if (request.expiresAt && request.expiresAt.getTime() <= now.getTime())
        throw conflict('This request expired before it was approved; the tenant may request again.');
      const waits =
        request.startsAt !== null &&
        request.startsAt !== undefined &&
        request.startsAt.getTime() > now.getTime();
      const decided = { decidedBy: principal.userId, decisionNote, decidedAt: now };
      if (!(await transition(em, id, ['PENDING'], { status: waits ? 'APPROVED' : 'ACTIVE', ...decided })))
        throw lostRace('approve');
      const current = await reloadRequest(em, id);
      if (!waits) {
        const tier = (await em.findOneOrFail(Tenant, { id: current.tenant.id })).tier;
        const governance = await governanceForQueueWrite(
          em,
          await em.findOneOrFail(Queue, { id: current.queue.id }),
          tier,
        );
        // The same check a platform admin's queue update passes (cluster.ts): the new queue on a scratch
        // core.
        change = await applyRequest(em, current, now, ({ queue, cohortName }) => {
          try {
            core.upsertQueue(queueSpec(queue, cohortName, 1, governance));
          } catch (error) {
            schedulerInputError(error);
          }
        });
        auditInput.nominal = {
          flavor: current.flavor,
          resource: current.resource,
          from: change.from,
          to: change.to,
        };
      }
      await em.flush();
      return { result: current, tenantId: current.tenant.id, targetType: 'QuotaRequest', targetId: id };
    },
  );
  // After commit: the leader reloads the queue's limits; the tenant and the platform hear of it.
  if (change) ctx.scheduler.announce({ kind: 'config' });
  announceRequest(
    ctx.events,
    {
      requestId: id,
      tenantId: approved.tenant.id,
      queueId: approved.queue.id,
      status: approved.status,
      quotaChanged: change !== null,
    },
    ctx.now().getTime(),
  );
  return approved;
}

/** Platform admins reject a PENDING request, saying why. */
export async function rejectQuotaRequest(
  ctx: ServiceContext,
  id: string,
  note: string,
): Promise<QuotaRequest> {
  const rejected = await auditedMutation(
    ctx,
    { action: 'quotaRequest.reject', input: { id, note } },
    async (em) => {
      const { principal } = await decidable(ctx, em, id, 'reject');
      const decisionNote = validNote(note, true);
      if (
        !(await transition(em, id, ['PENDING'], {
          status: 'REJECTED',
          decidedBy: principal.userId,
          decisionNote,
          decidedAt: ctx.now(),
        }))
      )
        throw lostRace('reject');
      const current = await reloadRequest(em, id);
      return { result: current, tenantId: current.tenant.id, targetType: 'QuotaRequest', targetId: id };
    },
  );
  announceRequest(
    ctx.events,
    {
      requestId: id,
      tenantId: rejected.tenant.id,
      queueId: rejected.queue.id,
      status: 'REJECTED',
      quotaChanged: false,
    },
    ctx.now().getTime(),
  );
  return rejected;
}

/** The tenant's admins cancel a request that has not applied yet (PENDING, or APPROVED waiting for its
 * start).
 */
export async function cancelQuotaRequest(ctx: ServiceContext, id: string): Promise<QuotaRequest> {
  const cancelled = await auditedMutation(
    ctx,
    { action: 'quotaRequest.cancel', input: { id } },
    async (em) => {
      const request = await em.findOne(QuotaRequest, { id });
      if (!request) throw notFound('QuotaRequest');
      requireTenantAdminRequester(ctx, request.tenant.id, 'QuotaRequest');
      if (request.status !== 'PENDING' && request.status !== 'APPROVED')
        throw conflict(
          `This request is ${request.status}; only a PENDING or APPROVED (not yet started) request can be cancelled.`,
        );
      if (!(await transition(em, id, ['PENDING', 'APPROVED'], { status: 'CANCELLED', endedAt: ctx.now() })))
        throw conflict('This request started or was decided meanwhile; it can no longer be cancelled.');
      const current = await reloadRequest(em, id);
      return { result: current, tenantId: current.tenant.id, targetType: 'QuotaRequest', targetId: id };
    },
  );
  announceRequest(
    ctx.events,
    {
      requestId: id,
      tenantId: cancelled.tenant.id,
      queueId: cancelled.queue.id,
      status: 'CANCELLED',
      quotaChanged: false,
    },
    ctx.now().getTime(),
  );
  return cancelled;
}
