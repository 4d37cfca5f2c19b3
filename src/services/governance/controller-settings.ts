// The second-level controller's switch and window (GovernanceSetting 'controller'), and what its last
// run left (GovernanceSetting 'controller.state'): read by the leader's task each run, written by
// platform admins (setGovernanceController) and by the task in its fenced write.
import { type EntityManager, LockMode } from '@mikro-orm/core';
import type { SqlEntityManager } from '@mikro-orm/knex';
import { GovernanceSetting } from '../../persistence/governance/index.js';

export const CONTROLLER_SETTING_KEY = 'controller';
/** The audit action of one adjustment (system, in the queue's tenant). */
export const CONTROLLER_ADJUST_ACTION = 'governance.controller.adjust';
/** Written per queue when the controller is switched off and the queue goes back to its static setting. */
export const CONTROLLER_RESTORE_ACTION = 'governance.controller.restore';
export const CONTROLLER_STATE_KEY = 'controller.state';
/** The window when neither FAIRWAY_CONTROLLER_WINDOW_MS nor a platform admin set one: 5 minutes. */
export const DEFAULT_CONTROLLER_WINDOW_MS = 300_000;
/** A window a platform admin may set, in seconds. */
export const MIN_WINDOW_SECONDS = 10;
export const MAX_WINDOW_SECONDS = 86_400;

/** The stored switch: `windowMs` null means the installation's default (FAIRWAY_CONTROLLER_WINDOW_MS). */
export interface ControllerSwitchValue {
  enabled: boolean;
  windowMs: number | null;
}

/** What the last run left: when it ran and the audit events of the adjustments it applied. */
export interface ControllerRunState {
  lastRunAt: number | null;
  /** The window the last run closed (leader clock, ms). */
  windowStart: number | null;
  /** The audit events ('governance.controller.adjust') of the last run's adjustments. */
  lastAdjustmentEventIds: string[];
  /** The leader's default window (its FAIRWAY_CONTROLLER_WINDOW_MS), so any replica can tell the window in
   * force.
   */
  defaultWindowMs: number | null;
}

const NO_STATE: ControllerRunState = {
  lastRunAt: null,
  windowStart: null,
  lastAdjustmentEventIds: [],
  defaultWindowMs: null,
};

/** A missing row is the default: on, at the installation's window. */
export function switchOf(row: GovernanceSetting | null): ControllerSwitchValue {
  const v = row?.value ?? {};
  return {
    enabled: v.enabled !== false,
    windowMs: typeof v.windowMs === 'number' && v.windowMs > 0 ? v.windowMs : null,
  };
}

export function stateOf(row: GovernanceSetting | null): ControllerRunState {
  const v = (row?.value ?? {}) as Partial<ControllerRunState>;
  return {
    lastRunAt: typeof v.lastRunAt === 'number' ? v.lastRunAt : null,
    windowStart: typeof v.windowStart === 'number' ? v.windowStart : null,
    lastAdjustmentEventIds: Array.isArray(v.lastAdjustmentEventIds)
      ? v.lastAdjustmentEventIds.map(String)
      : [],
    defaultWindowMs: typeof v.defaultWindowMs === 'number' ? v.defaultWindowMs : null,
  };
}

export async function readControllerSwitch(em: EntityManager): Promise<ControllerSwitchValue> {
  return switchOf(await em.findOne(GovernanceSetting, { key: CONTROLLER_SETTING_KEY }, { refresh: true }));
}

export async function readControllerState(em: EntityManager): Promise<ControllerRunState> {
  const row = await em.findOne(GovernanceSetting, { key: CONTROLLER_STATE_KEY }, { refresh: true });
  return row ? stateOf(row) : { ...NO_STATE };
}

function isPostgres(em: EntityManager): boolean {
  return (em as SqlEntityManager).getKnex().client.config.client === 'pg';
}

/**
 * The switch's row, created with the default when missing and locked until the transaction ends
 * (PostgreSQL; SQLite serialises writers anyway). The leader's adjustments and a platform admin's
 * switching take this lock first, so an adjustment computed while the controller was being switched
 * off is never written after the restore.
 */
export async function lockControllerSwitch(em: EntityManager): Promise<GovernanceSetting> {
  await (em as SqlEntityManager)
    .createQueryBuilder(GovernanceSetting)
    .insert({ key: CONTROLLER_SETTING_KEY, value: { enabled: true, windowMs: null }, updatedAt: new Date() })
    .onConflict('key')
    .ignore()
    .execute('run');
  const row = await em.findOne(
    GovernanceSetting,
    { key: CONTROLLER_SETTING_KEY },
    { refresh: true, ...(isPostgres(em) ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {}) },
  );
  if (!row) throw new Error('governance setting row vanished');
  return row;
}

/** Writes the run state (in the caller's transaction). */
export async function writeControllerState(em: EntityManager, state: ControllerRunState): Promise<void> {
  const row = await em.findOne(GovernanceSetting, { key: CONTROLLER_STATE_KEY });
  const value = { ...state } as unknown as Record<string, unknown>;
  if (row) row.value = value;
  else em.create(GovernanceSetting, { key: CONTROLLER_STATE_KEY, value, updatedAt: new Date() });
}

/** The window in force: the one a platform admin set, else the leader's default, else 5 minutes. */
export function effectiveWindowMs(
  sw: ControllerSwitchValue,
  state: ControllerRunState,
  fallback = DEFAULT_CONTROLLER_WINDOW_MS,
): number {
  return sw.windowMs ?? state.defaultWindowMs ?? fallback;
}

export function sameSetting(
  a: { lend: number; borrow: number | null },
  b: { lend: number; borrow: number | null },
): boolean {
  return a.lend === b.lend && a.borrow === b.borrow;
}
