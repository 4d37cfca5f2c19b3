import type { EntityManager } from '@mikro-orm/core';
import { allBound } from '../bound-sql.js';
import { PriorityClassRow, Queue } from '../cluster/index.js';
import { columnsOf, plainFromJoined } from '../plain-rows.js';
import { tenantScope } from '../raw-reads.js';
import { Project, Tenant } from '../tenancy/index.js';

/** What a submit to a named queue reads before it writes, as plain rows (plain-rows.ts). */
export interface SubmitRows {
  queue: Queue;
  tenant: Tenant;
  /** The named project, else the tenant's default one; null when it is not found or not visible. */
  project: Project | null;
  priorityClass: PriorityClassRow | null;
  /** The job an earlier submit made under the idempotency key (null: none, or no key given). */
  existing: { id: string; requestHash: string } | null;
}

/**
 * Everything a submit to a named queue reads, in one statement: the queue with its tenant, the
 * project (named, or the tenant's default), the priority class and the job an earlier submit made
 * under the same idempotency key. Six reads were six round trips and pool acquisitions per
 * submit (on PostgreSQL, most of a submit's time under load). The tenant filter is applied as
 * the ORM applies it (raw-reads.ts tenantScope): on the queue and on the project; the job is
 * looked up in the queue's tenant. Null when the queue is not found or not visible.
 */
export async function readSubmitRows(
  em: EntityManager,
  input: { queueId: string; projectId: string | null; priorityClass: string; idempotencyKey: string | null },
): Promise<SubmitRows | null> {
  const q = (id: string) => em.getPlatform().quoteIdentifier(id);
  const select = (alias: string, columns: readonly string[]) =>
    columns.map((c) => `${alias}.${q(c)} as ${q(`${alias}__${c}`)}`);
  const scope = tenantScope(em);
  const scoped = (alias: string) =>
    scope ? ` and ${alias}.${q('tenant_id')} in (${scope.params.map(() => '?').join(', ')})` : '';
  const sql = [
    `select ${[
      ...select('q', columnsOf(em, Queue)),
      ...select('t', columnsOf(em, Tenant)),
      ...select('p', columnsOf(em, Project)),
      ...select('c', columnsOf(em, PriorityClassRow)),
      `j.${q('id')} as ${q('j__id')}`,
      `j.${q('request_hash')} as ${q('j__request_hash')}`,
    ].join(', ')}`,
    `from ${q('queues')} q join ${q('tenants')} t on t.${q('id')} = q.${q('tenant_id')}`,
    `left join ${q('projects')} p on p.${q('id')} = coalesce(?, t.${q('default_project_id')})${scoped('p')}`,
    `left join ${q('priority_classes')} c on c.${q('name')} = ?`,
    `left join ${q('jobs')} j on j.${q('tenant_id')} = q.${q('tenant_id')} and j.${q('idempotency_key')} = ?`,
    `where q.${q('id')} = ?${scoped('q')}`,
  ].join(' ');
  const params = [
    input.projectId,
    ...(scope?.params ?? []),
    input.priorityClass,
    // No key: a NULL never equals, so no job is joined.
    input.idempotencyKey,
    input.queueId,
    ...(scope?.params ?? []),
  ];
  const [row] = await allBound<Record<string, unknown>>(em, sql, params);
  if (!row) return null;
  const queue = plainFromJoined(em, Queue, row, 'q__')!;
  const tenant = plainFromJoined(em, Tenant, row, 't__')!;
  return {
    queue,
    tenant,
    project: plainFromJoined(em, Project, row, 'p__'),
    priorityClass: plainFromJoined(em, PriorityClassRow, row, 'c__'),
    existing: row.j__id == null ? null : { id: String(row.j__id), requestHash: String(row.j__request_hash) },
  };
}
