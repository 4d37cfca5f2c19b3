// How an approved quota request changes a queue, and how a temporary one is undone: shared by the
// approval (a caller's audited transaction) and the leader's activation/expiry task (a fenced write).
// Nothing here opens a transaction or announces anything: the callers do, after commit.
import { type EntityManager, LockMode } from '@mikro-orm/core';
import type { SqlEntityManager } from '@mikro-orm/knex';
import type { QuotaSpec, ResourceName } from '../../core/scheduling/index.js';
import type { EventBus } from '../../events/index.js';
import { AuditEvent } from '../../persistence/audit/index.js';
import { Cohort, Queue } from '../../persistence/cluster/index.js';
import { QuotaRequest, type QuotaRequestStatus } from '../../persistence/governance/index.js';
import { uuidv7 } from '../../persistence/ids.js';

/** The audit log's request id for what the leader does to quota requests by itself (activation, expiry). */
export const QUOTA_REQUEST_SYSTEM_REQUEST_ID = 'governance.quota-requests';

export function nominalIn(quotas: QuotaSpec, flavor: string, resource: ResourceName): number {
  return quotas[flavor]?.[resource]?.nominal ?? 0;
}

/** The quotas with one nominal changed; the resource's borrowing and lending limits and every other line
 * stay.
 */
export function withNominal(
  quotas: QuotaSpec,
  flavor: string,
  resource: ResourceName,
  nominal: number,
): QuotaSpec {
  const next = structuredClone(quotas);
  const line = next[flavor] ?? {};
  line[resource] = { ...(line[resource] ?? {}), nominal };
  next[flavor] = line;
  return next;
}

/**
 * The nominal after a temporary grant ends: back by the difference it granted (a later change by a
 * platform admin stays), never below 0.
 */
export function nominalAfterExpiry(current: number, granted: number, previous: number): number {
  return Math.max(0, current - (granted - previous));
}

function isPostgres(em: EntityManager): boolean {
  return (em as SqlEntityManager).getKnex().client.config.client === 'pg';
}

/**
 * Moves a request from one of `from` to its next status, and reports whether this call did it.
 * The conditional UPDATE is the guard: of two concurrent approvals (or two leaders) only one
 * matches the row; PostgreSQL makes the second wait for the first's commit and re-check `from`.
 */
export async function transition(
  em: EntityManager,
  id: string,
  from: readonly QuotaRequestStatus[],
  change: Partial<Pick<QuotaRequest, 'status' | 'decisionNote' | 'decidedAt' | 'endedAt'>> & {
    decidedBy?: string | null;
  },
): Promise<boolean> {
  const updated = await em.nativeUpdate(QuotaRequest, { id, status: { $in: [...from] } }, {
    ...change,
    updatedAt: new Date(),
  } as never);
  return updated === 1;
}

/** The request as it now is in this transaction (after `transition`, which bypasses the identity map). */
export function reloadRequest(em: EntityManager, id: string): Promise<QuotaRequest> {
  return em.findOneOrFail(QuotaRequest, { id }, { refresh: true, filters: false });
}

/** The queue, locked until commit where the database has row locks (two grants on one queue must not lose
 * one).
 */
async function lockedQueue(em: EntityManager, queueId: string): Promise<Queue> {
  return em.findOneOrFail(
    Queue,
    { id: queueId },
    { refresh: true, filters: false, ...(isPostgres(em) ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {}) },
  );
}

export interface QueueChange {
  queue: Queue;
  cohortName: string | null;
  from: number;
  to: number;
}

/**
 * Applies the request's nominal to its queue (status ACTIVE, previousNominal recorded). `check`
 * tries the new queue on a scratch core before anything is flushed (the caller's validation).
 */
export async function applyRequest(
  em: EntityManager,
  request: QuotaRequest,
  at: Date,
  check?: (change: QueueChange) => void,
): Promise<QueueChange> {
  const queue = await lockedQueue(em, request.queue.id);
  const resource = request.resource as ResourceName;
  const from = nominalIn(queue.quotas, request.flavor, resource);
  const change: QueueChange = { queue, cohortName: await cohortNameOf(em, queue), from, to: request.nominal };
  queue.quotas = withNominal(queue.quotas, request.flavor, resource, request.nominal);
  check?.(change);
  request.previousNominal = from;
  request.appliedAt = at;
  request.status = 'ACTIVE';
  return change;
}

/** Undoes an ACTIVE request's grant (status EXPIRED). */
export async function undoRequest(em: EntityManager, request: QuotaRequest, at: Date): Promise<QueueChange> {
  const queue = await lockedQueue(em, request.queue.id);
  const resource = request.resource as ResourceName;
  const from = nominalIn(queue.quotas, request.flavor, resource);
  const to = nominalAfterExpiry(from, request.nominal, request.previousNominal ?? 0);
  queue.quotas = withNominal(queue.quotas, request.flavor, resource, to);
  request.status = 'EXPIRED';
  request.endedAt = at;
  return { queue, cohortName: await cohortNameOf(em, queue), from, to };
}

async function cohortNameOf(em: EntityManager, queue: Queue): Promise<string | null> {
  if (!queue.cohort) return null;
  return (await em.findOne(Cohort, { id: queue.cohort.id }, { filters: false }))?.name ?? null;
}

/** An audit entry for what the leader did by itself (no actor), as budget alerts are written. */
export function systemAudit(
  em: EntityManager,
  action: string,
  request: QuotaRequest,
  input: Record<string, unknown>,
  at: Date,
): AuditEvent {
  return em.create(AuditEvent, {
    id: uuidv7(),
    tenant: request.tenant.id,
    actor: null,
    actorTokenId: null,
    action,
    targetType: 'QuotaRequest',
    targetId: request.id,
    input,
    outcome: 'SUCCESS',
    errorCode: null,
    requestId: QUOTA_REQUEST_SYSTEM_REQUEST_ID,
    createdAt: at,
  });
}

/** What was committed about one request, to announce. */
export interface RequestAnnouncement {
  requestId: string;
  tenantId: string;
  queueId: string;
  status: QuotaRequestStatus;
  /** The queue's nominal changed (QUOTA_CHANGED, queue-updated). */
  quotaChanged: boolean;
  /** A system audit entry to announce on the tenant's audit stream. */
  auditEventId?: string;
}

/** After commit: the tenant's events (QUOTA_CHANGED when the nominal moved, QUOTA_REQUEST) and the
 * platform's stream.
 */
export function announceRequest(events: EventBus, a: RequestAnnouncement, at: number): void {
  if (a.quotaChanged) {
    events.publish('tenant-event', a.tenantId, { kind: 'QUOTA_CHANGED', queueId: a.queueId, at });
    events.publish('queue-updated', a.queueId, { queueId: a.queueId, at });
  }
  events.publish('tenant-event', a.tenantId, {
    kind: 'QUOTA_REQUEST',
    requestId: a.requestId,
    queueId: a.queueId,
    status: a.status,
    at,
  });
  events.publish('quota-request', { requestId: a.requestId, tenantId: a.tenantId, status: a.status, at });
  if (a.auditEventId) events.publish('audit-event', a.tenantId, { auditEventId: a.auditEventId });
}
