// The leader's quota-request task: activates APPROVED requests whose start has come and undoes
// ACTIVE temporary ones whose expiry has passed, on the leader's clock. Each request changes in its
// own fenced write whose conditional status update is the guard: a stale leader writes nothing, and
// a request already moved (by another leader, or a cancel) is skipped — so each happens once.

import { QuotaRequest } from '../../persistence/governance/index.js';
import type { LeaderTask, LeaderTaskContext } from '../scheduling/index.js';
import {
  announceRequest,
  applyRequest,
  type RequestAnnouncement,
  reloadRequest,
  systemAudit,
  transition,
  undoRequest,
} from './quota-request-apply.js';

/** How often the leader looks for requests to activate or expire (FAIRWAY_QUOTA_REQUEST_INTERVAL_MS). */
export const DEFAULT_QUOTA_REQUEST_INTERVAL_MS = 30_000;
/** Requests handled per run at most (the rest next run). */
const BATCH = 100;

export function quotaRequestTask(settings: { quotaRequestIntervalMs?: number }): LeaderTask {
  return {
    name: 'quota-requests',
    everyMs: () => settings.quotaRequestIntervalMs ?? DEFAULT_QUOTA_REQUEST_INTERVAL_MS,
    run: runQuotaRequests,
  };
}

export async function runQuotaRequests(ctx: LeaderTaskContext): Promise<void> {
  const now = new Date(ctx.now);
  const due = await ctx.em().find(
    QuotaRequest,
    {
      $or: [
        {
          status: 'APPROVED',
          $or: [{ startsAt: null }, { startsAt: { $lte: now } }, { expiresAt: { $lte: now } }],
        },
        { status: 'ACTIVE', expiresAt: { $ne: null, $lte: now } },
      ],
    },
    { orderBy: { id: 'asc' }, limit: BATCH, filters: false },
  );
  if (!due.length || ctx.ended()) return;
  const done: RequestAnnouncement[] = [];
  for (const { id } of due) {
    const written: { announcement: RequestAnnouncement | null } = { announcement: null };
    await ctx.write(async (em) => {
      written.announcement = await step(em, id, now);
    });
    if (written.announcement) done.push(written.announcement);
    if (ctx.ended()) break;
  }
  // The core takes the new limits from the database; then everyone hears of what committed.
  if (done.some((a) => a.quotaChanged) && !ctx.ended()) await ctx.reloadConfig();
  for (const a of done) announceRequest(ctx.events, a, ctx.now);
}

type Em = Parameters<Parameters<LeaderTaskContext['write']>[0]>[0];

/** One request's due change, in the fenced transaction; null when it had already moved. */
async function step(em: Em, id: string, now: Date): Promise<RequestAnnouncement | null> {
  const request = await em.findOne(QuotaRequest, { id }, { refresh: true, filters: false });
  if (!request) return null;
  const expired = request.expiresAt != null && request.expiresAt.getTime() <= now.getTime();
  const base = { requestId: id, tenantId: request.tenant.id, queueId: request.queue.id };
  if (request.status === 'APPROVED' && expired) {
    // Its window passed before it could start (the leader was away): it never applied, nothing to undo.
    if (!(await transition(em, id, ['APPROVED'], { status: 'EXPIRED', endedAt: now }))) return null;
    const current = await reloadRequest(em, id);
    const audit = systemAudit(
      em,
      'quotaRequest.expire',
      current,
      { applied: false, expiresAt: current.expiresAt?.toISOString() ?? null },
      now,
    );
    return { ...base, status: 'EXPIRED', quotaChanged: false, auditEventId: audit.id };
  }
  if (request.status === 'APPROVED' && (!request.startsAt || request.startsAt.getTime() <= now.getTime())) {
    if (!(await transition(em, id, ['APPROVED'], { status: 'ACTIVE' }))) return null;
    const current = await reloadRequest(em, id);
    const change = await applyRequest(em, current, now);
    const audit = systemAudit(
      em,
      'quotaRequest.activate',
      current,
      {
        flavor: current.flavor,
        resource: current.resource,
        from: change.from,
        to: change.to,
        startsAt: current.startsAt?.toISOString() ?? null,
      },
      now,
    );
    return { ...base, status: 'ACTIVE', quotaChanged: true, auditEventId: audit.id };
  }
  if (request.status === 'ACTIVE' && expired) {
    if (!(await transition(em, id, ['ACTIVE'], { status: 'EXPIRED' }))) return null;
    const current = await reloadRequest(em, id);
    const change = await undoRequest(em, current, now);
    const audit = systemAudit(
      em,
      'quotaRequest.expire',
      current,
      {
        applied: true,
        flavor: current.flavor,
        resource: current.resource,
        granted: current.nominal,
        previousNominal: current.previousNominal,
        from: change.from,
        to: change.to,
      },
      now,
    );
    return { ...base, status: 'EXPIRED', quotaChanged: true, auditEventId: audit.id };
  }
  return null;
}
