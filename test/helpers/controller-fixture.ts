// The governance controller's test fixture: the demo's two queues, 16 H100s of nominal each in one
// cohort of 32, under two test policies — aurora a guaranteed lender whose lend coefficient may move
// in [0, 1] from 0.5, borealis an elastic borrower whose borrow coefficient may move in [0.25, 1] from
// 0.5. Borealis's own preemption spec keeps its jobs a week (declared; 604.8 s on the test backend at
// 1000×) before a reclaim, so a lender's job really waits while its share is lent.
import type { EntityManager } from '@mikro-orm/core';
import { expect } from 'vitest';
import { AuditEvent } from '../../src/persistence/audit/entities.js';
import { Queue } from '../../src/persistence/cluster/entities.js';
import { IsolationPolicyRow } from '../../src/persistence/governance/entities.js';
import { Job } from '../../src/persistence/jobs/entities.js';
import { Tenant } from '../../src/persistence/tenancy/entities.js';
import { systemEntityManager } from '../../src/persistence/tenant-filter.js';
import type { FairwayApp } from '../../src/server/app.js';
import { replayControllerAudit } from '../../src/services/governance/controller-audit.js';
import {
  CONTROLLER_ADJUST_ACTION,
  CONTROLLER_RESTORE_ACTION,
} from '../../src/services/governance/controller-settings.js';

export const WINDOW_MS = 60_000;
/** Governance options for buildApp/startTestApp: a one-minute window (leader clock), sampled every 20 ms. */
export const CONTROLLER_TEST_GOVERNANCE = {
  controller: { windowMs: WINDOW_MS, sampleEveryMs: 20 },
  idleCheckIntervalMs: 0,
};
export const WEEK_SECONDS = 7 * 86_400;

export const enc = (type: string, id: string) => Buffer.from(`${type}:${id}`).toString('base64');
export const rawId = (globalId: string) => Buffer.from(globalId, 'base64').toString().split(':')[1]!;

export interface Fixture {
  aurora: { tenantId: string; queueId: string };
  borealis: { tenantId: string; queueId: string };
}

const idle = {
  utilizationBelow: 0.05,
  idleForMs: 3_600_000,
  notRunningForMs: 3_600_000,
  action: 'NOTIFY' as const,
};

/** Writes the two policies and puts the demo queues under them; the caller rebuilds the core. */
export async function setUpControllerQueues(app: FairwayApp): Promise<Fixture> {
  const em = systemEntityManager(app.orm).fork({ clear: true });
  em.create(IsolationPolicyRow, {
    name: 'ctl-lender',
    description: 'test lender',
    level: 'GUARANTEED',
    coefficients: {
      lend: { min: 0, base: 0.5, max: 1 },
      borrow: { min: 0, base: 0, max: 0 },
      minRunBeforeReclaimMs: 0,
      reclaimGraceMs: 0,
      preemptible: 'RECLAIM_ONLY',
      idle,
    },
    builtIn: false,
  });
  em.create(IsolationPolicyRow, {
    name: 'ctl-borrower',
    description: 'test borrower',
    level: 'ELASTIC',
    coefficients: {
      lend: { min: 0.5, base: 1, max: 1 },
      borrow: { min: 0.25, base: 0.5, max: 1 },
      minRunBeforeReclaimMs: 0,
      reclaimGraceMs: 0,
      preemptible: 'ANY',
      idle,
    },
    builtIn: false,
  });
  const out = {} as Fixture;
  for (const [slug, key, policy] of [
    ['aurora-research', 'aurora', 'ctl-lender'],
    ['borealis-inference', 'borealis', 'ctl-borrower'],
  ] as const) {
    const tenant = await em.findOneOrFail(Tenant, { slug });
    const queue = await em.findOneOrFail(Queue, { tenant: tenant.id });
    queue.quotas = { 'h100-80g': { gpu: { nominal: 16 } } };
    queue.isolationPolicy = policy;
    queue.preemption =
      key === 'borealis'
        ? {
            withinQueue: 'LowerPriority',
            reclaimWithinCohort: 'Any',
            minRunBeforeReclaimMs: WEEK_SECONDS * 1000,
          }
        : { withinQueue: 'LowerPriority', reclaimWithinCohort: 'Any' };
    out[key] = { tenantId: tenant.id, queueId: queue.id };
  }
  await em.flush();
  return out;
}

/** The core's H100 limits of a queue, as the graph's Queue.usage shows them (null: unset). */
export function coreLimits(
  app: FairwayApp,
  queue: string,
): { lendingLimit: number | null; borrowingLimit: number | null; used: number } {
  const r = app.scheduler
    .queueStatus(queue)
    ?.resources.find((x) => x.flavor === 'h100-80g' && x.resource === 'gpu');
  return {
    lendingLimit: r?.lendingLimit ?? null,
    borrowingLimit: r?.borrowingLimit ?? null,
    used: r?.used ?? 0,
  };
}

export async function controllerSettingOf(app: FairwayApp, queueId: string) {
  return (await systemEntityManager(app.orm).fork({ clear: true }).findOneOrFail(Queue, { id: queueId }))
    .controllerSetting;
}

export async function controllerEvents(em: EntityManager): Promise<AuditEvent[]> {
  return em.find(
    AuditEvent,
    { action: { $in: [CONTROLLER_ADJUST_ACTION, CONTROLLER_RESTORE_ACTION] } },
    { orderBy: { id: 'asc' }, filters: false },
  );
}

export async function jobState(app: FairwayApp, globalId: string): Promise<string> {
  return (
    await systemEntityManager(app.orm)
      .fork({ clear: true })
      .findOneOrFail(Job, { id: rawId(globalId) })
  ).state;
}

/**
 * The audit log proves every adjustment: each recomputes (pure core) to what was applied, each
 * starts from what the previous one of its queue left (or the static base after a restore, given),
 * windows never overlap (nothing applied twice), and each queue holds its last adjustment's `to`.
 */
export async function expectReproducibleAuditLog(
  app: FairwayApp,
  base: Record<string, { lend: number; borrow: number | null }>,
): Promise<AuditEvent[]> {
  const em = systemEntityManager(app.orm).fork({ clear: true });
  const events = await controllerEvents(em);
  const adjusts = events.filter((e) => e.action === CONTROLLER_ADJUST_ACTION);
  const replayed = replayControllerAudit(adjusts);
  expect(replayed.length).toBe(adjusts.length);
  for (const r of replayed) expect(r, JSON.stringify(r)).toMatchObject({ matches: true });
  const last = new Map<string, { to: { lend: number; borrow: number | null }; windowEnd: number | null }>();
  for (const e of events) {
    const queueId = e.targetId!;
    const input = e.input as {
      from: { lend: number; borrow: number | null };
      to: { lend: number; borrow: number | null };
      windowStart?: number;
      windowEnd?: number;
    };
    const prev = last.get(queueId);
    if (e.action === CONTROLLER_ADJUST_ACTION) {
      expect(input.from, `adjustment ${e.id} starts where the queue was`).toEqual(
        prev ? prev.to : base[queueId],
      );
      if (prev?.windowEnd != null) expect(input.windowStart!).toBeGreaterThanOrEqual(prev.windowEnd);
    }
    last.set(queueId, {
      to: input.to,
      windowEnd: e.action === CONTROLLER_ADJUST_ACTION ? input.windowEnd! : (prev?.windowEnd ?? null),
    });
  }
  for (const [queueId, { to }] of last) {
    const events = (await controllerEvents(em)).filter((e) => e.targetId === queueId);
    const held = await controllerSettingOf(app, queueId);
    if (events[events.length - 1]!.action === CONTROLLER_RESTORE_ACTION) expect(held).toBeNull();
    else expect({ lend: held!.lend, borrow: held!.borrow }).toEqual(to);
  }
  return events;
}
