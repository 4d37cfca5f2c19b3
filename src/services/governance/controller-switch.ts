// Platform admins switch the second-level controller on or off and set its window; switching it off
// restores every queue's static setting in the same transaction (audited per queue in its tenant).

import type { LimitSetting } from '../../core/governance/index.js';
import { baseSetting, policyForQueue } from '../../core/governance/index.js';
import { AuditEvent } from '../../persistence/audit/index.js';
import { Queue } from '../../persistence/cluster/index.js';
import { loadPolicyLibrary } from '../../persistence/governance/index.js';
import { uuidv7 } from '../../persistence/ids.js';
import { Tenant } from '../../persistence/tenancy/index.js';
import { badInput } from '../../shared/index.js';
import { auditedMutation } from '../audit/index.js';
import { requirePlatformAdmin, type ServiceContext } from '../context.js';
import { adjustmentView, type LimitAdjustmentView } from './controller-audit.js';
import {
  CONTROLLER_RESTORE_ACTION,
  effectiveWindowMs,
  lockControllerSwitch,
  MAX_WINDOW_SECONDS,
  MIN_WINDOW_SECONDS,
  readControllerState,
  readControllerSwitch,
  switchOf,
} from './controller-settings.js';

export interface GovernanceControllerView {
  enabled: boolean;
  windowSeconds: number;
  lastRunAt: Date | null;
  lastAdjustments: LimitAdjustmentView[];
}

export async function governanceController(ctx: ServiceContext): Promise<GovernanceControllerView> {
  requirePlatformAdmin(ctx);
  const [sw, state] = await Promise.all([readControllerSwitch(ctx.em), readControllerState(ctx.em)]);
  const ids = state.lastAdjustmentEventIds;
  const events = ids.length
    ? await ctx.em.find(AuditEvent, { id: { $in: ids } }, { orderBy: { id: 'asc' } })
    : [];
  return {
    enabled: sw.enabled,
    windowSeconds: Math.round(effectiveWindowMs(sw, state) / 1000),
    lastRunAt: state.lastRunAt === null ? null : new Date(state.lastRunAt),
    lastAdjustments: events.map(adjustmentView),
  };
}

/** A queue the switch restored to its static setting, announced after commit. */
interface Restored {
  queueId: string;
  tenantId: string;
  auditEventId: string;
  to: LimitSetting;
}

/**
 * On: the controller adjusts from its next window. Off: every queue's controllerSetting is cleared
 * (the policy's static base applies again), each audited in its tenant's log; after commit the
 * leader rebuilds its core and each tenant hears LIMITS_ADJUSTED (reason CONTROLLER_OFF).
 */
export async function setGovernanceController(
  ctx: ServiceContext,
  input: { enabled: boolean; windowSeconds?: number | null },
): Promise<GovernanceControllerView> {
  const restored: Restored[] = [];
  await auditedMutation(ctx, { action: 'governance.controller.set', input: { ...input } }, async (em) => {
    requirePlatformAdmin(ctx);
    const w = input.windowSeconds;
    if (
      w !== undefined &&
      w !== null &&
      (!Number.isInteger(w) || w < MIN_WINDOW_SECONDS || w > MAX_WINDOW_SECONDS)
    ) {
      throw badInput(
        `windowSeconds must be a whole number within ${MIN_WINDOW_SECONDS}..${MAX_WINDOW_SECONDS}.`,
      );
    }
    const row = await lockControllerSwitch(em);
    const before = switchOf(row);
    row.value = { enabled: input.enabled, windowMs: w ? w * 1000 : before.windowMs };
    if (!input.enabled) restored.push(...(await restoreStatic(em, ctx)));
    await em.flush();
    return { result: null, tenantId: null, targetType: 'GovernanceSetting', targetId: 'controller' };
  });
  if (restored.length) {
    ctx.scheduler.announce({ kind: 'config' });
    const at = ctx.now().getTime();
    for (const r of restored) {
      ctx.events.publish('audit-event', r.tenantId, { auditEventId: r.auditEventId });
      ctx.events.publish('tenant-event', r.tenantId, {
        kind: 'LIMITS_ADJUSTED',
        queueId: r.queueId,
        at,
        lend: r.to.lend,
        borrow: r.to.borrow,
        reasons: ['CONTROLLER_OFF'],
      });
      ctx.events.publish('queue-updated', r.queueId, { queueId: r.queueId, at });
    }
  }
  ctx.scheduler.announce({ kind: 'governance' });
  return governanceController(ctx);
}

/** Clears every controller setting (in the caller's transaction), with one system audit event per queue in
 * its tenant.
 */
async function restoreStatic(
  em: Parameters<Parameters<typeof auditedMutation>[2]>[0],
  ctx: ServiceContext,
): Promise<Restored[]> {
  const queues = await em.find(
    Queue,
    { controllerSetting: { $ne: null } },
    { orderBy: { id: 'asc' }, filters: false },
  );
  if (!queues.length) return [];
  const library = await loadPolicyLibrary(em);
  const tenants = new Map(
    (await em.find(Tenant, { id: { $in: [...new Set(queues.map((q) => q.tenant.id))] } })).map((t) => [
      t.id,
      t.tier as string,
    ]),
  );
  const out: Restored[] = [];
  for (const queue of queues) {
    const from = queue.controllerSetting!;
    const policy = policyForQueue(library, queue, tenants.get(queue.tenant.id) ?? 'STANDARD')?.policy ?? null;
    // Outside governance now (or its policy gone): no static setting to name; the queue's own limits apply.
    const to: LimitSetting = policy ? baseSetting(policy) : { lend: 1, borrow: null };
    queue.controllerSetting = null;
    const event = em.create(AuditEvent, {
      id: uuidv7(),
      tenant: queue.tenant.id,
      actor: null,
      actorTokenId: null,
      action: CONTROLLER_RESTORE_ACTION,
      targetType: 'Queue',
      targetId: queue.id,
      input: {
        from: { lend: from.lend, borrow: from.borrow },
        to,
        reasons: ['CONTROLLER_OFF'],
        policy: policy?.name ?? null,
      },
      outcome: 'SUCCESS',
      errorCode: null,
      requestId: ctx.requestId,
      createdAt: ctx.now(),
    });
    out.push({ queueId: queue.id, tenantId: queue.tenant.id, auditEventId: event.id, to });
  }
  return out;
}
