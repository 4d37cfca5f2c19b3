// The controller's audit trail read back: a queue's adjustments (Queue.limitAdjustments), the last
// run's (governanceController), and the replay that recomputes each audited adjustment from what
// its event records with the pure core (replayAdjustment) — the proof that they are reproducible.

import { accessFor } from '../../auth/index.js';
import {
  type ControllerQueueInput,
  type ControllerSettings,
  type ControllerWindow,
  DEFAULT_CONTROLLER_SETTINGS,
  type IsolationPolicy,
  type LimitSetting,
  replayAdjustment,
} from '../../core/governance/index.js';
import { AuditEvent } from '../../persistence/audit/index.js';
import type { Queue } from '../../persistence/cluster/index.js';
import { requireCapability, requirePrincipal, type ServiceContext } from '../context.js';
import { CONTROLLER_ADJUST_ACTION, CONTROLLER_RESTORE_ACTION, sameSetting } from './controller-settings.js';

/** One audited change of a queue's coefficients, as the graph shows it. */
export interface LimitAdjustmentView {
  auditEventId: string;
  queueId: string;
  tenantId: string;
  at: Date;
  from: LimitSetting;
  to: LimitSetting;
  /** The controller's rules that moved it, or CONTROLLER_OFF for a restore. */
  reasons: string[];
  policy: string | null;
  /** The figures it was decided from; null for a restore. */
  input: ControllerQueueInput | null;
  windowStart: number | null;
  windowEnd: number | null;
}

const setting = (v: unknown): LimitSetting => {
  const s = (v ?? {}) as Partial<LimitSetting>;
  return {
    lend: Number(s.lend ?? 0),
    borrow: s.borrow === null || s.borrow === undefined ? null : Number(s.borrow),
  };
};

export function adjustmentView(event: AuditEvent): LimitAdjustmentView {
  const r = event.input as Record<string, unknown>;
  const policy =
    r.policy && typeof r.policy === 'object'
      ? String((r.policy as { name?: unknown }).name ?? '')
      : typeof r.policy === 'string'
        ? r.policy
        : null;
  return {
    auditEventId: event.id,
    queueId: event.targetId ?? '',
    tenantId: event.tenant?.id ?? '',
    at: event.createdAt,
    from: setting(r.from),
    to: setting(r.to),
    reasons: Array.isArray(r.reasons) ? r.reasons.map(String) : [],
    policy: policy || null,
    input: event.action === CONTROLLER_ADJUST_ACTION ? (r.input as ControllerQueueInput) : null,
    windowStart: typeof r.windowStart === 'number' ? r.windowStart : null,
    windowEnd: typeof r.windowEnd === 'number' ? r.windowEnd : null,
  };
}

/**
 * The queue's audited adjustments and restores, newest first. Its tenant's auditors and admins
 * (audit:read) and platform admins see them; a caller outside the tenant gets NOT_FOUND.
 */
export async function limitAdjustments(
  ctx: ServiceContext,
  queue: Queue,
  first: number,
): Promise<LimitAdjustmentView[]> {
  const principal = requirePrincipal(ctx);
  const tenantId = queue.tenant.id;
  // Platform admins see every queue's figures (as its usage); inside the tenant it takes audit:read.
  if (accessFor(principal, tenantId, 'usage:read') !== 'platform')
    requireCapability(ctx, tenantId, 'audit:read', 'Queue');
  else requireCapability(ctx, tenantId, 'tenant:read', 'Queue');
  const events = await ctx.em.find(
    AuditEvent,
    {
      tenant: tenantId,
      targetType: 'Queue',
      targetId: queue.id,
      action: { $in: [CONTROLLER_ADJUST_ACTION, CONTROLLER_RESTORE_ACTION] },
    },
    { orderBy: { id: 'desc' }, limit: first },
  );
  return events.map(adjustmentView);
}

/** One audited adjustment recomputed. */
export interface ReplayedAdjustment {
  auditEventId: string;
  queue: string;
  applied: LimitSetting;
  recomputed: LimitSetting;
  appliedReasons: string[];
  recomputedReasons: string[];
  matches: boolean;
}

/**
 * Recomputes each 'governance.controller.adjust' event's `to` from its recorded input, `from`,
 * window facts, settings and policy coefficients with the pure core, and says whether it is what
 * was applied. Other events are skipped.
 */
export function replayControllerAudit(
  events: readonly Pick<AuditEvent, 'id' | 'action' | 'input'>[],
): ReplayedAdjustment[] {
  const out: ReplayedAdjustment[] = [];
  for (const event of events) {
    if (event.action !== CONTROLLER_ADJUST_ACTION) continue;
    const r = event.input as {
      input: ControllerQueueInput;
      from: LimitSetting;
      to: LimitSetting;
      reasons: string[];
      window: ControllerWindow;
      settings: ControllerSettings;
      policy: IsolationPolicy;
    };
    const applied = setting(r.to);
    const { to, reasons } = replayAdjustment(
      { input: r.input, from: setting(r.from), window: r.window },
      r.policy,
      { ...DEFAULT_CONTROLLER_SETTINGS, ...r.settings },
    );
    out.push({
      auditEventId: event.id,
      queue: r.input.queue,
      applied,
      recomputed: to,
      appliedReasons: [...r.reasons],
      recomputedReasons: [...reasons],
      matches: sameSetting(to, applied) && reasons.join() === r.reasons.join(),
    });
  }
  return out;
}
