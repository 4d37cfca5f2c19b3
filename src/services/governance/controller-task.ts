// The second level of the two-level controller, as a leader task. It samples the core's
// view of every queue several times a window and, when a window ends, runs the pure controllerStep
// over the governed queues and applies each adjustment in one fenced write: the queue's
// controllerSetting and an audit event (tenant = the queue's tenant, no actor) holding everything
// the adjustment was decided from. After commit: LIMITS_ADJUSTED and queue-updated, then the core is
// rebuilt so its limits follow (core-loader builds governed queues from the setting in force).

import {
  type ControllerAdjustment,
  type ControllerSettings,
  controllerStep,
  DEFAULT_CONTROLLER_SETTINGS,
  policyForQueue,
  settingInForce,
} from '../../core/governance/index.js';
import { AuditEvent } from '../../persistence/audit/index.js';
import { Queue } from '../../persistence/cluster/index.js';
import { loadPolicyLibrary } from '../../persistence/governance/index.js';
import { uuidv7 } from '../../persistence/ids.js';
import { Tenant } from '../../persistence/tenancy/index.js';
import type { LeaderTask, LeaderTaskContext } from '../scheduling/index.js';
import {
  type GovernedQueue,
  type GpuReading,
  gatherControllerInputs,
  gpuReading,
  WindowSamples,
} from './controller-inputs.js';
import {
  CONTROLLER_ADJUST_ACTION,
  type ControllerRunState,
  type ControllerSwitchValue,
  DEFAULT_CONTROLLER_WINDOW_MS,
  effectiveWindowMs,
  lockControllerSwitch,
  readControllerState,
  readControllerSwitch,
  sameSetting,
  switchOf,
  writeControllerState,
} from './controller-settings.js';

/** Samples per window (the task runs this often within a window). */
const SAMPLES_PER_WINDOW = 20;
/** The sampling period's bounds (ms, real time). */
const MIN_SAMPLE_MS = 20;
const MAX_SAMPLE_MS = 15_000;

export interface ControllerTaskOptions {
  /** The installation's window (FAIRWAY_CONTROLLER_WINDOW_MS; default 5 minutes); a platform admin's setting
   * overrides it.
   */
  windowMs?: number;
  /** How often the core is sampled (real ms); default window / 20 within [20 ms, 15 s]. */
  sampleEveryMs?: number;
  /** The rules' numbers other than the window (step, wait limit, SLA target); default
   * DEFAULT_CONTROLLER_SETTINGS.
   */
  tuning?: Partial<Omit<ControllerSettings, 'windowMs'>>;
}

/** The audit event's input of one adjustment: enough to recompute `to` (replayControllerAudit). */
export interface AdjustmentRecord {
  run: string;
  windowStart: number;
  windowEnd: number;
  input: ControllerAdjustment['input'];
  from: ControllerAdjustment['from'];
  to: ControllerAdjustment['to'];
  reasons: ControllerAdjustment['reasons'];
  window: ControllerAdjustment['window'];
  settings: ControllerSettings;
  /** The queue's policy as it was (its coefficient ranges bound the move). */
  policy: unknown;
}

/** An adjustment committed by a run, announced after commit. */
interface Applied {
  queueId: string;
  tenantId: string;
  auditEventId: string;
  adjustment: ControllerAdjustment;
}

export function controllerTask(options: ControllerTaskOptions = {}): LeaderTask {
  const defaultWindowMs = options.windowMs ?? DEFAULT_CONTROLLER_WINDOW_MS;
  let windowMs = defaultWindowMs;
  let samples: WindowSamples | null = null;
  /** Real time of the last run: a long gap means this replica was not leading (or was paused). */
  let lastRealRun = 0;
  let known: { sw: ControllerSwitchValue; state: ControllerRunState; readAt: number } | null = null;
  const everyMs = (): number =>
    options.sampleEveryMs ??
    Math.min(MAX_SAMPLE_MS, Math.max(MIN_SAMPLE_MS, Math.floor(windowMs / SAMPLES_PER_WINDOW)));

  return {
    name: 'governance-controller',
    everyMs,
    async run(ctx) {
      const real = performance.now();
      // A new term (or a pause) starts from an empty window: what the core held meanwhile is unknown.
      if (samples && real - lastRealRun > Math.max(5 * everyMs(), 2000)) samples = null;
      lastRealRun = real;
      // The switch is read every ten periods, at most four times a window (a window's close reads it
      // again, under its lock): switching on takes effect within a quarter window.
      if (!known || real - known.readAt > Math.min(windowMs / 4, 10 * everyMs())) {
        const em = ctx.em();
        const [sw, state] = await Promise.all([readControllerSwitch(em), readControllerState(em)]);
        if (ctx.ended()) return;
        known = { sw, state, readAt: real };
      }
      const { sw, state } = known;
      windowMs = effectiveWindowMs(sw, { ...state, defaultWindowMs }, defaultWindowMs);
      if (!sw.enabled) {
        samples = null;
        return;
      }
      if (!samples) {
        samples = new WindowSamples(ctx.now);
        // Any replica can then tell the window in force (the governanceController query).
        if (state.defaultWindowMs !== defaultWindowMs) {
          await ctx.write(async (tx) =>
            writeControllerState(tx, { ...(await readControllerState(tx)), defaultWindowMs }),
          );
          known = null;
        }
      }
      samples.add(ctx.now, readAll(ctx));
      if (ctx.now - samples.startAt < windowMs || ctx.ended()) return;
      const closing = samples;
      samples = new WindowSamples(ctx.now);
      samples.add(ctx.now, readAll(ctx));
      known = null;
      await closeWindow(
        ctx,
        closing,
        { ...DEFAULT_CONTROLLER_SETTINGS, ...options.tuning, windowMs },
        defaultWindowMs,
      );
    },
  };
}

function readAll(ctx: LeaderTaskContext): Map<string, GpuReading> {
  const out = new Map<string, GpuReading>();
  for (const name of ctx.queueIds.keys()) {
    const status = ctx.queueStatus(name);
    if (status) out.set(name, gpuReading(status));
  }
  return out;
}

/** Decides the window [samples.startAt, ctx.now) and applies its adjustments. */
async function closeWindow(
  ctx: LeaderTaskContext,
  samples: WindowSamples,
  settings: ControllerSettings,
  defaultWindowMs: number,
): Promise<void> {
  const em = ctx.em();
  const [library, queues] = await Promise.all([
    loadPolicyLibrary(em),
    em.find(Queue, {}, { orderBy: { id: 'asc' } }),
  ]);
  if (!queues.length) return;
  const tenants = new Map(
    (await em.find(Tenant, { id: { $in: [...new Set(queues.map((q) => q.tenant.id))] } })).map((t) => [
      t.id,
      t.tier as string,
    ]),
  );
  if (ctx.ended()) return;
  const governed: GovernedQueue[] = [];
  const current = new Map<string, { lend: number; borrow: number | null }>();
  for (const row of queues) {
    const choice = policyForQueue(library, row, tenants.get(row.tenant.id) ?? 'STANDARD');
    if (!choice || !ctx.queueIds.has(row.name)) continue;
    governed.push({ id: row.id, name: row.name, tenantId: row.tenant.id, policy: choice.policy.name });
    current.set(row.name, settingInForce(choice.policy, row).setting);
  }
  const endAt = ctx.now;
  const inputs = await gatherControllerInputs(em, {
    queues: governed,
    samples,
    endAt,
    slaMs: settings.waitLimitMs,
    pendingInCore: (jobId) => ctx.core.jobState(jobId) === 'pending',
  });
  if (ctx.ended()) return;
  const adjustments = controllerStep(inputs, current, library.policies, settings);
  const byName = new Map(governed.map((q) => [q.name, q]));
  const run = uuidv7();
  const applied: Applied[] = [];
  await ctx.write(async (tx) => {
    applied.length = 0;
    const sw = switchOf(await lockControllerSwitch(tx));
    const state = await readControllerState(tx);
    // Switched off meanwhile, or another leader closed a window that overlaps this one: nothing applies.
    if (!sw.enabled || (state.lastRunAt !== null && state.lastRunAt > samples.startAt)) return;
    for (const adjustment of adjustments) {
      const q = byName.get(adjustment.queue)!;
      const row = await tx.findOne(Queue, { id: q.id }, { refresh: true });
      // The queue changed policy or setting since the inputs were read: its adjustment is void.
      const policy = row
        ? policyForQueue(library, row, tenants.get(row.tenant.id) ?? 'STANDARD')?.policy
        : undefined;
      if (
        !row ||
        policy?.name !== adjustment.policy ||
        !sameSetting(settingInForce(policy, row).setting, adjustment.from)
      )
        continue;
      row.controllerSetting = { lend: adjustment.to.lend, borrow: adjustment.to.borrow, at: endAt };
      const record: AdjustmentRecord = {
        run,
        windowStart: samples.startAt,
        windowEnd: endAt,
        input: adjustment.input,
        from: adjustment.from,
        to: adjustment.to,
        reasons: adjustment.reasons,
        window: adjustment.window,
        settings,
        policy: structuredClone(policy),
      };
      // Built as auditedMutation builds its events (src/services/audit/audit.ts), with no actor: the system.
      const event = tx.create(AuditEvent, {
        id: uuidv7(),
        tenant: q.tenantId,
        actor: null,
        actorTokenId: null,
        action: CONTROLLER_ADJUST_ACTION,
        targetType: 'Queue',
        targetId: q.id,
        input: record as unknown as Record<string, unknown>,
        outcome: 'SUCCESS',
        errorCode: null,
        requestId: `controller:${run}`,
        createdAt: new Date(endAt),
      });
      applied.push({ queueId: q.id, tenantId: q.tenantId, auditEventId: event.id, adjustment });
    }
    await writeControllerState(tx, {
      lastRunAt: endAt,
      windowStart: samples.startAt,
      lastAdjustmentEventIds: applied.map((a) => a.auditEventId),
      defaultWindowMs,
    });
  });
  if (!applied.length) return;
  // The core's limits follow the settings just committed (followers rebuild on scheduler-state); then
  // everyone hears of them — also when this term ended meanwhile: they are committed.
  if (!ctx.ended()) await ctx.reloadConfig();
  ctx.events.publish('scheduler-state', { at: endAt });
  for (const a of applied) {
    ctx.events.publish('audit-event', a.tenantId, { auditEventId: a.auditEventId });
    ctx.events.publish('tenant-event', a.tenantId, {
      kind: 'LIMITS_ADJUSTED',
      queueId: a.queueId,
      at: endAt,
      lend: a.adjustment.to.lend,
      borrow: a.adjustment.to.borrow,
      reasons: [...a.adjustment.reasons],
    });
    ctx.events.publish('queue-updated', a.queueId, { queueId: a.queueId, at: endAt });
  }
  ctx.wake();
}
