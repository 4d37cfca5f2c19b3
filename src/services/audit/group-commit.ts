import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { DEFAULT_GROUP_COMMIT_MS } from '../../config/index.js';
import { insertRows } from '../../persistence/bound-sql.js';
import { afterGroupWindow } from '../../shared/index.js';
import type { ServiceContext } from '../context.js';
import { auditEventRow, auditedFailure, type MutationMeta, type MutationOutcome } from './audit.js';

/**
 * What a grouped mutation writes: rows by entity name (property names as keys, relations as
 * ids), in an order where a row's foreign keys name rows of earlier entries or rows that already
 * exist. Every row of one entity has the same properties in the same order (one multi-row
 * INSERT serves the whole group).
 */
export interface GroupedWrite<T> extends MutationOutcome<T> {
  rows: readonly (readonly [entity: string, row: Record<string, unknown>])[];
}

interface Grouped {
  ctx: ServiceContext;
  meta: MutationMeta;
  build: () => GroupedWrite<unknown>;
  resolve: (result: unknown) => void;
  reject: (error: unknown) => void;
}

/** Mutations waiting for the group commit in progress, per database connection. */
const groups = new WeakMap<object, { waiting: Grouped[]; writing: boolean }>();
const MAX_GROUP = 256;

/**
 * auditedMutation for work that only inserts rows (no reads, nothing awaited): the calls that
 * arrive while a group is being written are written next, together, in one transaction whose
 * statements are one multi-row INSERT per table (bound parameters, so their texts repeat and are
 * prepared once), audit events included (group commit). Each caller still gets its answer only
 * after that commit, with its own audit event. If a group's transaction fails on a duplicate (an
 * idempotency key used twice), each of its mutations is tried again alone, so the conflict is that
 * caller's alone; any other failure (the database down) fails each of them as auditedMutation
 * would.
 */
export function groupedAuditedMutation<T>(
  ctx: ServiceContext,
  meta: MutationMeta,
  build: () => GroupedWrite<T>,
): Promise<T> {
  const key = ctx.em.getConnection();
  let group = groups.get(key);
  if (!group) groups.set(key, (group = { waiting: [], writing: false }));
  const current = group;
  return new Promise<T>((resolve, reject) => {
    current.waiting.push({ ctx, meta, build, resolve: resolve as (result: unknown) => void, reject });
    // Written after the group-commit window: the submits whose reads finish meanwhile join the group.
    if (!current.writing) {
      current.writing = true;
      afterGroupWindow(ctx.groupCommitMs ?? DEFAULT_GROUP_COMMIT_MS, () => void writeGroups(current));
    }
  });
}

async function writeGroups(group: { waiting: Grouped[]; writing: boolean }): Promise<void> {
  group.writing = true;
  try {
    while (group.waiting.length) await writeGroup(group.waiting.splice(0, MAX_GROUP));
  } finally {
    group.writing = false;
  }
}

async function writeGroup(batch: Grouped[]): Promise<void> {
  let written: { outcome: GroupedWrite<unknown>; auditEventId: string }[];
  try {
    written = await batch[0]!.ctx.em.fork({ clear: true }).transactional(async (em) => {
      const audits: Record<string, unknown>[] = [];
      const byEntity = new Map<string, Record<string, unknown>[]>();
      const out = batch.map((m) => {
        const outcome = m.build();
        const audit = auditEventRow(
          m.ctx,
          m.meta,
          'SUCCESS',
          outcome.tenantId,
          outcome.targetType,
          outcome.targetId,
        );
        audits.push(audit);
        for (const [entity, row] of outcome.rows) {
          const rows = byEntity.get(entity);
          if (rows) rows.push(row);
          else byEntity.set(entity, [row]);
        }
        return { outcome, auditEventId: String(audit.id) };
      });
      await insertRows(em, 'AuditEvent', audits);
      for (const [entity, rows] of byEntity) await insertRows(em, entity, rows);
      return out;
    });
  } catch (error) {
    if (batch.length > 1 && error instanceof UniqueConstraintViolationException) {
      // Whose key it was: each alone (a group of one fails as auditedMutation would, CONFLICT audited).
      await Promise.all(batch.map((m) => writeGroup([m])));
    } else {
      await Promise.all(
        batch.map(async (m) =>
          m.reject(await auditedFailure(m.ctx, m.meta, error, null).catch((failure: unknown) => failure)),
        ),
      );
    }
    return;
  }
  batch.forEach((m, i) => {
    const { outcome, auditEventId } = written[i]!;
    // Announced only after commit: a subscriber never hears of a change that rolled back.
    if (outcome.tenantId) m.ctx.events.publish('audit-event', outcome.tenantId, { auditEventId });
    m.resolve(outcome.result);
  });
}
