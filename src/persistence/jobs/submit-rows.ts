import type { EntityManager } from '@mikro-orm/core';
import { allBound, placeholders, tableOf } from '../bound-sql.js';
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
  const quote = (id: string) => q(em, id);
  const select = (alias: string, columns: readonly string[]) =>
    columns.map((c) => `${alias}.${quote(c)} as ${quote(`${alias}__${c}`)}`);
  const scope = tenantScope(em);
  const scoped = (alias: string) =>
    scope ? ` and ${alias}.${quote('tenant_id')} in ${placeholders(scope.params.length)}` : '';
  const sql = [
    `select ${[
      ...select('q', columnsOf(em, Queue)),
      ...select('t', columnsOf(em, Tenant)),
      ...select('p', columnsOf(em, Project)),
      ...select('c', columnsOf(em, PriorityClassRow)),
      `j.${quote('id')} as ${quote('j__id')}`,
      `j.${quote('request_hash')} as ${quote('j__request_hash')}`,
    ].join(', ')}`,
    `from ${quote('queues')} q join ${quote('tenants')} t on t.${quote('id')} = q.${quote('tenant_id')}`,
    `left join ${quote('projects')} p on p.${quote('id')} = coalesce(?, t.${quote('default_project_id')})${scoped('p')}`,
    `left join ${quote('priority_classes')} c on c.${quote('name')} = ?`,
    `left join ${quote('jobs')} j on j.${quote('tenant_id')} = q.${quote('tenant_id')} and j.${quote('idempotency_key')} = ?`,
    `where q.${quote('id')} = ?${scoped('q')}`,
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

/**
 * The jobs earlier submits of a tenant made under these idempotency keys, as bare columns (almost
 * every key is new, and an ORM find cost more than the rest of a submit's read): what submitJob's
 * and submitJobs' idempotency checks compare.
 */
export async function jobsByIdempotencyKey(
  em: EntityManager,
  tenantId: string,
  keys: readonly string[],
): Promise<{ id: string; key: string; requestHash: string }[]> {
  if (!keys.length) return [];
  const t = tableOf(em, 'Job');
  return allBound<{ id: string; key: string; requestHash: string }>(
    em,
    `select ${t.column('id')} as id, ${t.column('idempotencyKey')} as ${q(em, 'key')}, ${t.column('requestHash')} as ${q(em, 'requestHash')} from ${t.table} where ${t.column('tenant')} = ? and ${t.column('idempotencyKey')} in ${placeholders(keys.length)}`,
    [tenantId, ...keys],
  );
}

function q(em: EntityManager, id: string): string {
  return em.getPlatform().quoteIdentifier(id);
}
